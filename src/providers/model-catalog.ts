// The model catalog a server offers: the built-in entries of each configured provider merged
// with what its models endpoint lists, cached for a minute.
import type { Logger } from "../log.js";
import { knownModels, lookupModel, type ModelInfo } from "./catalog.js";
import { listingIsRemote, listLiveModels, type ModelListing } from "./model-listing.js";

export interface ListedModel extends ModelInfo {
  /** The model a turn uses when neither the thread nor the turn picks one. */
  isDefault: boolean;
}

export interface ModelCatalogOptions {
  /** Providers to list, by the name a client passes back in turn/start. */
  providers: string[];
  /** The environment each provider is built from (its keys and endpoints). */
  envFor(provider: string): NodeJS.ProcessEnv;
  default?: { provider: string; model: string };
  log: Logger;
  ttlMs?: number;
  /** Replaceable for tests. */
  listLive?: (provider: string, env: NodeJS.ProcessEnv) => Promise<ModelListing | undefined>;
}

export interface ListOptions {
  /**
   * False: a provider whose models endpoint is on another machine is not asked; it offers the
   * listing an earlier call fetched, else its built-in entries. For answers a client waits on
   * before anything else (a handshake, a new session): a round trip to a remote API, often with
   * a TLS handshake first, costs more than all the rest of them. Default true.
   */
  askRemote?: boolean;
}

const TTL_MS = 60_000;
/** Shorter than doctor's: a client is waiting on model/list. */
const LIVE_TIMEOUT_MS = 5_000;

export class ModelCatalog {
  /** Promises, so concurrent model/list calls share one request per provider; `settled` once it has answered. */
  private readonly cache = new Map<string, { at: number; models: Promise<ModelInfo[]>; settled?: ModelInfo[] }>();

  constructor(private readonly options: ModelCatalogOptions) {}

  async list({ askRemote = true }: ListOptions = {}): Promise<ListedModel[]> {
    const lists = await Promise.all(
      this.options.providers.map((name) =>
        askRemote || !listingIsRemote(name, this.options.envFor(name)) ? this.modelsOf(name) : this.modelsAtHand(name),
      ),
    );
    const all = lists.flat();
    const def = this.options.default;
    // The default model is always offered, even when no listing knows it (a local model, a new id).
    if (def && !all.some((m) => m.provider === def.provider && m.id === def.model)) all.push(entry(def.provider, def.model));
    return all.map((m) => ({ ...m, isDefault: def !== undefined && m.provider === def.provider && m.id === def.model }));
  }

  private modelsOf(provider: string): Promise<ModelInfo[]> {
    const now = Date.now();
    const hit = this.cache.get(provider);
    if (hit && now - hit.at < (this.options.ttlMs ?? TTL_MS)) return hit.models;
    const cached = { at: now, models: this.load(provider) };
    void cached.models.then((models) => Object.assign(cached, { settled: models }));
    this.cache.set(provider, cached);
    return cached.models;
  }

  /** What a provider offers without asking it: the last listing fetched (even stale), else the built-in entries. */
  private modelsAtHand(provider: string): ModelInfo[] {
    return this.cache.get(provider)?.settled ?? this.builtIn(provider);
  }

  /** Catalog entries are filed under the API family ("openai"); listed under the name in use. */
  private builtIn(provider: string): ModelInfo[] {
    return knownModels(provider).map((m) => ({ ...m, provider }));
  }

  private async load(provider: string): Promise<ModelInfo[]> {
    const known = this.builtIn(provider);
    const listLive = this.options.listLive ?? ((name, env) => listLiveModels(name, env, { timeoutMs: LIVE_TIMEOUT_MS }));
    let live: ModelListing | undefined;
    try {
      live = await listLive(provider, this.options.envFor(provider));
    } catch (error) {
      live = { ok: false, problem: error instanceof Error ? error.message : String(error) };
    }
    if (!live) return known;
    if (!live.ok) {
      this.options.log.warn({ provider, problem: live.problem }, "live model listing failed; offering the built-in catalog entries");
      return known;
    }
    const byId = new Map(known.map((m) => [m.id, m]));
    for (const { id, displayName } of live.models) {
      const base = byId.get(id) ?? entry(provider, id);
      byId.set(id, displayName && !base.displayName ? { ...base, displayName } : base);
    }
    return [...byId.values()];
  }
}

/** What the catalog knows about a model id (a dated snapshot inherits its alias's facts). */
function entry(provider: string, id: string): ModelInfo {
  const info = lookupModel(provider, id);
  return info ? { ...info, id, provider } : { id, provider, reasoning: false };
}
