// The part of stream() every SDK-backed provider shares: load the SDK lazily, open the
// streaming request, turn SDK events into ModelStreamEvents, notice a stream that ended too
// early, and describe failures in plain words. Each provider supplies only what is its own.
//
// Abort policy: when the signal fires, the stream ends silently (no error), whether the abort
// lands before the response, mid-stream or during a retry wait. The caller knows it aborted.
import { ProviderError, type ModelStreamEvent } from "./provider.js";
import { toProviderError, untilAborted, type SdkFailure } from "./sdk-errors.js";

export interface SdkStream<Sdk, Event> {
  signal: AbortSignal;
  /** The service as configured, for failures before the SDK is loaded. */
  service: string;
  load(): Promise<Sdk>;
  /** The service as the loaded client names it (its base URL). */
  describeService(sdk: Sdk): string;
  /** Starts the streaming request; it must pass the signal to the SDK. */
  open(sdk: Sdk): Promise<AsyncIterable<Event>>;
  /** Client events from one SDK event. */
  map(event: Event): Iterable<ModelStreamEvent>;
  /** A failure the API reported inside the stream, when this event is one. */
  failureIn?(event: Event): SdkFailure | undefined;
  /** Whether the API's closing event arrived; otherwise the stream was cut. */
  complete(): boolean;
  /** What was missing, for the error when the stream was cut ("no message_stop"). */
  missingEnd: string;
  /** The closing events (usage, stop) once the stream is complete. */
  finish(): Iterable<ModelStreamEvent>;
  describeFailure(error: unknown, sdk: Sdk | undefined): SdkFailure;
}

export async function* streamFromSdk<Sdk, Event>(spec: SdkStream<Sdk, Event>): AsyncIterable<ModelStreamEvent> {
  const { signal } = spec;
  if (signal.aborted) return;
  let service = spec.service;
  let afterOutput = false;
  let midResponse = false;
  let sdk: Sdk | undefined;
  try {
    sdk = await spec.load();
    service = spec.describeService(sdk);
    const stream = await untilAborted(spec.open(sdk), signal);
    if (!stream) return;
    midResponse = true;
    for await (const event of stream) {
      const failure = spec.failureIn?.(event);
      if (failure) throw toProviderError({ service, ...failure, afterOutput });
      for (const out of spec.map(event)) {
        afterOutput = true;
        yield out;
      }
    }
    if (signal.aborted) return; // the SDKs end their iterators quietly on abort
    if (!spec.complete()) {
      throw toProviderError({ service, connection: true, midResponse, detail: `the stream closed ${spec.missingEnd}`, afterOutput });
    }
    yield* spec.finish();
  } catch (error) {
    if (signal.aborted) return;
    if (error instanceof ProviderError) throw error;
    throw toProviderError({ ...spec.describeFailure(error, sdk), service, afterOutput, midResponse });
  }
}
