// The registry: every face this server speaks, once. The server routes connections by it, and
// `switchyard schema` exports its protocol tables. Adding a face is one folder and one line here.
import { acpFace } from "./acp/index.js";
import { agentCompanyFace } from "./agentcompany/index.js";
import { agentCraftFace } from "./agentcraft/index.js";
import { notInitialized } from "./appserver/errors.js";
import { appServerFace } from "./appserver/index.js";
import { claudeFace } from "./claude/index.js";
import { codexFace } from "./codex/index.js";
import { yeaftFace } from "./yeaft/index.js";
import type { Face } from "./face.js";

export const FACES: readonly Face[] = [appServerFace, claudeFace, codexFace, acpFace, agentCraftFace, agentCompanyFace, yeaftFace];

/** What a connection gets for a request before its first initialize: the default face's answer. */
export const refuseBeforeInitialize = notInitialized;

export function findFace(name: string): Face | undefined {
  return FACES.find((face) => face.name === name);
}

/** The face of a connection whose initialize no other face claims. */
export const DEFAULT_FACE = appServerFace;

/**
 * The faces chosen per connection on the shared JSON-RPC listeners, in the order they are asked:
 * those with a distinctive initialize first, the default last (it claims any `clientInfo`).
 */
export function routedFaces(): Face[] {
  const routed = FACES.filter((face) => face.open !== undefined && face.claims !== undefined && face !== DEFAULT_FACE);
  return [...routed, DEFAULT_FACE];
}
