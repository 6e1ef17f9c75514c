// The approval gate. A tool that needs approval asks here; the answer comes from a cached
// grant, a persisted rule, a client (through an Approver a face registers), or the thread's
// policy when no client can answer in time.
import { newId } from "../ids.js";
import type { ApprovalAsk, ClientToolCall, ClientToolResult, UserQuestion } from "../tools/tool.js";
import { setBoundedTimeout } from "../timers.js";
import type { ApprovalDecision, ApprovalPolicy, ApprovalSource, ApprovalType } from "../domain/model.js";

export const ALL_DECISIONS: ApprovalDecision[] = ["accept", "acceptForSession", "acceptAlways", "decline", "cancel"];

export interface ApprovalRequest extends ApprovalAsk {
  threadId: string;
  turnId: string;
  /** The approvalRequest item that shows this request in the thread. */
  itemId: string;
  /** The tool call that needs the approval. */
  callId: string;
  requestId: string;
  decisions: ApprovalDecision[];
}

/** Something that can put an approval question to a person: one per capable client connection. */
export interface Approver {
  /** Whether this approver follows the thread and can answer for it now. */
  canAnswer(threadId: string): boolean;
  /** Resolves with the person's decision; rejects if it cannot answer (e.g. disconnected). */
  ask(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision>;
  /** Puts a tool's question (ask_user) to the person; for clients that can show one. */
  question?(threadId: string, question: UserQuestion, signal: AbortSignal): Promise<string>;
  /** Runs a tool the client provides (configuration.dynamicTools). */
  callTool?(request: ClientToolCall & { threadId: string; turnId: string }, signal: AbortSignal): Promise<ClientToolResult>;
}

export interface ApprovalOutcome {
  decision: ApprovalDecision;
  source: ApprovalSource;
}

export interface GateSettings {
  policy: ApprovalPolicy;
  autoApproveTypes: ApprovalType[];
  timeoutMs: number;
}

export function newApprovalRequestId(): string {
  return newId("approval");
}

/** What the policy decides when nobody answered. */
export function fallbackDecision(policy: ApprovalPolicy): ApprovalDecision {
  if (policy === "autoApprove") return "accept";
  if (policy === "interrupt") return "cancel";
  return "decline";
}

export function needsAsking(ask: ApprovalAsk, settings: GateSettings): boolean {
  return settings.policy !== "autoApprove" && !settings.autoApproveTypes.includes(ask.approvalType);
}

export class ApprovalBroker {
  private readonly approvers = new Set<Approver>();

  /**
   * `lineage` gives a thread and the threads it works for (a subagent's parent, ...): a client
   * following any of them can answer for it.
   */
  constructor(
    private readonly lineage: (threadId: string) => string[] = (threadId) => [threadId],
    /**
     * In a cluster, clients on other nodes may answer too: a node whose clients can answer says
     * so within this window (see `remoteSeen`), or the request goes on without them.
     */
    private readonly remoteWindowMs?: number,
  ) {}

  /** Requests clients on other nodes may answer, by request id. */
  private readonly remote = new Map<string, { seen(): void; answer(decision: ApprovalDecision): void }>();

  /** Another node's clients are being asked: the request waits for them (up to its timeout). */
  remoteSeen(requestId: string): void {
    this.remote.get(requestId)?.seen();
  }

  /** A client on another node answered. */
  remoteAnswer(requestId: string, decision: ApprovalDecision): void {
    this.remote.get(requestId)?.answer(decision);
  }

  /** Whether a client here can answer for the thread. */
  canAnswer(threadId: string): boolean {
    return this.answering(threadId).length > 0;
  }

  /**
   * Asks this process's clients a request another node's turn made; the first answer wins.
   * Undefined when none can answer, all fail, or `signal` aborts (answered elsewhere).
   */
  async askHere(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision | undefined> {
    if (signal.aborted) return undefined;
    const done = new AbortController();
    try {
      return await new Promise<ApprovalDecision | undefined>((resolve) => {
        signal.addEventListener("abort", () => resolve(undefined), { signal: done.signal });
        const allRefused = this.putQuestion(request, done.signal, resolve, () => {
          if (allRefused()) resolve(undefined);
        });
        if (allRefused()) resolve(undefined); // nobody here could be asked
      });
    } finally {
      done.abort();
    }
  }

  private answering(threadId: string): Approver[] {
    const threads = this.lineage(threadId);
    return [...this.approvers].filter((a) => threads.some((id) => a.canAnswer(id)));
  }
  /** Grants made with acceptForSession, by thread, then scope key. */
  private readonly sessionGrants = new Map<string, Set<string>>();

  addApprover(approver: Approver): () => void {
    this.approvers.add(approver);
    return () => this.approvers.delete(approver);
  }

  hasSessionGrant(threadId: string, scopeKey: string): boolean {
    return this.sessionGrants.get(threadId)?.has(scopeKey) ?? false;
  }

  grantForSession(threadId: string, scopeKey: string): void {
    let grants = this.sessionGrants.get(threadId);
    if (!grants) this.sessionGrants.set(threadId, (grants = new Set()));
    grants.add(scopeKey);
  }

  forgetThread(threadId: string): void {
    this.sessionGrants.delete(threadId);
  }

  /** Whether a client can answer questions for the thread now. */
  canQuestion(threadId: string): boolean {
    return this.answering(threadId).some((a) => a.question);
  }

  /**
   * Puts a question to the clients that can answer questions for the thread; the first answer
   * wins. Undefined when none can, all fail, or the turn ends first.
   */
  question(threadId: string, question: UserQuestion, turnSignal: AbortSignal): Promise<string | undefined> {
    const askable = this.answering(threadId).filter((a) => a.question);
    return firstAnswer(askable, (approver, done) => approver.question!(threadId, question, done), turnSignal);
  }

  /**
   * Sends a call of a client's tool to the clients following the thread that can run tools; the
   * first answer wins. Undefined when none can; a failure result when all of them fail.
   */
  async callTool(
    request: ClientToolCall & { threadId: string; turnId: string },
    turnSignal: AbortSignal,
  ): Promise<ClientToolResult | undefined> {
    const callers = this.answering(request.threadId).filter((a) => a.callTool);
    if (callers.length === 0 || turnSignal.aborted) return undefined;
    const done = new AbortController();
    try {
      return await new Promise<ClientToolResult | undefined>((resolve) => {
        const errors: string[] = [];
        turnSignal.addEventListener("abort", () => resolve(undefined), { signal: done.signal });
        for (const caller of callers) {
          caller.callTool!(request, done.signal).then(resolve, (error: unknown) => {
            errors.push(error instanceof Error ? error.message : String(error));
            if (errors.length === callers.length)
              resolve({ output: `The client could not run ${request.tool}: ${errors.join("; ")}`, success: false });
          });
        }
      });
    } finally {
      done.abort();
    }
  }

  /**
   * Asks every approver that can answer for the thread (and, in a cluster, the clients of other
   * nodes); the first answer wins. Falls back to the policy when nobody can answer, every client
   * asked refused, or the timeout passes. A client that disconnects keeps the question open: it
   * is asked again when it (or another) follows the thread (`offerPending`). `turnSignal`
   * aborting (interrupt) resolves as "cancel".
   */
  async ask(request: ApprovalRequest, settings: GateSettings, turnSignal: AbortSignal): Promise<ApprovalOutcome> {
    const askable = this.answering(request.threadId);
    const fallback = (source: ApprovalSource): ApprovalOutcome => ({ decision: fallbackDecision(settings.policy), source });
    if (askable.length === 0 && this.remoteWindowMs === undefined) return fallback("policy");
    if (turnSignal.aborted) return { decision: "cancel", source: "policy" };

    const done = new AbortController();
    try {
      return await new Promise<ApprovalOutcome>((resolve) => {
        const answered = (decision: ApprovalDecision): void =>
          resolve({ decision: request.decisions.includes(decision) ? decision : "decline", source: "client" });
        // Whether someone may still answer: a client here that was asked and neither answered
        // nor refused (one that disconnected may come back), another node that said it asks,
        // or (until the window closes) another node that has not said so yet.
        let remoteAsking = false;
        let windowOpen = this.remoteWindowMs !== undefined;
        const nobodyLeft = (): void => {
          if (allRefused() && !remoteAsking && !windowOpen) resolve(fallback("policy"));
        };
        const timer = setBoundedTimeout(() => resolve(fallback("timeout")), settings.timeoutMs);
        done.signal.addEventListener("abort", () => clearTimeout(timer));
        turnSignal.addEventListener("abort", () => resolve({ decision: "cancel", source: "policy" }), {
          signal: done.signal,
        });
        if (this.remoteWindowMs !== undefined) {
          this.remote.set(request.requestId, { seen: () => (remoteAsking = true), answer: answered });
          const window = setTimeout(() => {
            windowOpen = false;
            nobodyLeft();
          }, this.remoteWindowMs);
          done.signal.addEventListener("abort", () => {
            clearTimeout(window);
            this.remote.delete(request.requestId);
          });
        }
        const allRefused = this.putQuestion(request, done.signal, answered, nobodyLeft);
      });
    } finally {
      done.abort();
    }
  }

  /** Questions being asked (here, for a turn here or on another node), by request id. */
  private readonly open = new Map<string, { request: ApprovalRequest; asked: Set<Approver>; offer(approver: Approver): void }>();
  private readonly followListeners = new Set<(threadId: string) => void>();

  /**
   * Puts the request to the clients that can answer it now, and keeps it open for those that
   * follow the thread later (`offerPending`) until `until` aborts. Returns whether every client
   * asked so far refused; `refused` is called after each refusal. A client that disconnected
   * did not refuse: it is dropped from the asked, and asked again if it comes back.
   */
  private putQuestion(
    request: ApprovalRequest,
    until: AbortSignal,
    answered: (decision: ApprovalDecision) => void,
    refused: () => void,
  ): () => boolean {
    const asked = new Set<Approver>();
    let refusals = 0;
    const offer = (approver: Approver): void => {
      asked.add(approver);
      approver.ask(request, until).then(answered, () => {
        if (until.aborted) return;
        if (this.lineage(request.threadId).some((id) => approver.canAnswer(id))) {
          refusals++;
          refused();
        } else {
          asked.delete(approver);
        }
      });
    };
    this.open.set(request.requestId, { request, asked, offer });
    until.addEventListener("abort", () => this.open.delete(request.requestId));
    this.answering(request.threadId).forEach(offer);
    return () => refusals >= asked.size;
  }

  /**
   * A client began following the thread (subscribe, resume): the questions still open for it,
   * or for the threads working for it, are put to every client that can answer them now and was
   * not asked yet. Deferred a tick, so the face's answer (with the history) goes out first.
   */
  offerPending(threadId: string): void {
    setImmediate(() => {
      for (const { request, asked, offer } of [...this.open.values()]) {
        if (!this.lineage(request.threadId).includes(threadId)) continue;
        for (const approver of this.answering(request.threadId)) if (!asked.has(approver)) offer(approver);
      }
      for (const listener of this.followListeners) listener(threadId);
    });
  }

  /** Hears of clients beginning to follow a thread (the cluster's questions of other nodes' turns). */
  onFollow(listener: (threadId: string) => void): () => void {
    this.followListeners.add(listener);
    return () => this.followListeners.delete(listener);
  }
}

/**
 * Puts the same question to every approver at once; the first answer wins, the others are
 * withdrawn. Undefined when there is none, all of them fail, or `signal` aborts first.
 */
async function firstAnswer<T>(
  approvers: Approver[],
  ask: (approver: Approver, done: AbortSignal) => Promise<T>,
  signal: AbortSignal,
): Promise<T | undefined> {
  if (approvers.length === 0 || signal.aborted) return undefined;
  const done = new AbortController();
  try {
    return await new Promise<T | undefined>((resolve) => {
      let failures = 0;
      signal.addEventListener("abort", () => resolve(undefined), { signal: done.signal });
      for (const approver of approvers) {
        ask(approver, done.signal).then(resolve, () => {
          if (++failures === approvers.length) resolve(undefined);
        });
      }
    });
  } finally {
    done.abort();
  }
}
