// The parts of the official Anthropic SDK the provider uses, imported on the way to the first
// turn (anthropic.ts loads this module lazily): the SDK's base client with the Messages resource
// alone, and its error classes. The SDK's `Anthropic` client builds every resource (beta, files,
// skills, models, organization, ...) and so pulls them all in: bundled, 438 KB that a first turn
// compiles in ~33 ms. The SDK declares itself free of side effects, so the bundle keeps only
// what is named here: 127 KB, ~15 ms.
import { BaseAnthropic } from "@anthropic-ai/sdk";
import { Messages } from "@anthropic-ai/sdk/resources/messages";

export { APIConnectionError, APIError } from "@anthropic-ai/sdk";

/** A client for the Messages API; `withOptions` copies keep it (they are built by `this.constructor`). */
export class MessagesClient extends BaseAnthropic {
  readonly messages: Messages = new Messages(this);
}
