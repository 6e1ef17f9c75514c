// Approvals across a cluster: a turn that runs on another node asks for an approval (its
// approvalRequest item reaches this node through the store's feed). If a client here can
// answer, this node tells the owner it is asking (so the owner waits for it), asks, and
// forwards the answer. The owner's answer, from wherever it came, ends the question here.
import type { Logger } from "../log.js";
import type { RuntimeEvent } from "../domain/events.js";
import type { Store } from "../store/store.js";
import { ALL_DECISIONS, type ApprovalBroker, type ApprovalRequest } from "./approvals.js";

/** How long a turn's owner waits for another node to say its clients are being asked. */
export const REMOTE_APPROVAL_WINDOW_MS = 2_000;

export class ClusterApprovals {
  /** Other nodes' questions not answered yet, by request id: asked here when a client here can answer. */
  private readonly pending = new Map<string, ApprovalRequest>();
  /** Questions this node's clients are being asked for other nodes' turns, by request id. */
  private readonly asking = new Map<string, AbortController>();

  constructor(
    private readonly store: Store,
    private readonly broker: ApprovalBroker,
    /** Whether the thread's turn runs in this process. */
    private readonly runsHere: (threadId: string) => boolean,
    private readonly log: Logger,
  ) {
    // A client here began following a thread: another node's open question may be its to answer.
    broker.onFollow(() => {
      for (const request of this.pending.values()) this.offer(request);
    });
  }

  /** Looks at every committed event: another node's approval requests, and their ends. */
  observe(event: RuntimeEvent): void {
    if (event.type === "approval.resolved") this.settled(event.data.requestId);
    if (event.type === "item.completed" && event.data.item.type === "approvalRequest") this.settled(event.data.item.payload.requestId);
    if (event.type === "turn.completed" || event.type === "turn.failed" || event.type === "turn.cancelled") {
      for (const [requestId, request] of this.pending) if (request.turnId === event.data.turnId) this.settled(requestId);
    }
    if (event.type !== "item.started" || event.data.item.type !== "approvalRequest") return;
    if (this.runsHere(event.threadId)) return;
    const item = event.data.item;
    const { requestId, callId, decision: _decision, ...ask } = item.payload;
    const request: ApprovalRequest = {
      ...ask,
      threadId: event.threadId,
      turnId: item.turnId,
      itemId: item.id,
      callId,
      requestId,
      decisions: ALL_DECISIONS,
    };
    this.pending.set(requestId, request);
    this.offer(request);
  }

  private settled(requestId: string): void {
    this.pending.delete(requestId);
    this.asking.get(requestId)?.abort();
  }

  /** Asks this node's clients, unless they are being asked already or none can answer. */
  private offer(request: ApprovalRequest): void {
    if (this.asking.has(request.requestId) || !this.broker.canAnswer(request.threadId)) return;
    void this.ask(request).catch((error: unknown) =>
      this.log.warn({ err: error, requestId: request.requestId }, "could not answer another node's approval"),
    );
  }

  private async ask(request: ApprovalRequest): Promise<void> {
    const abort = new AbortController();
    this.asking.set(request.requestId, abort);
    try {
      // Said and asked at once: the owner hears of it while the person reads the question. The
      // answer does not wait for the owner to acknowledge that notice (the owner takes either in
      // any order: after the answer, the notice finds nothing to wait for); a notice the owner
      // was slow to acknowledge (a retryable timeout) must not drop the person's answer.
      void this.store
        .forward(request.threadId, { kind: "approvalSeen", requestId: request.requestId })
        .catch((error: unknown) =>
          this.log.debug({ err: error, requestId: request.requestId }, "the owner did not acknowledge the question yet"),
        );
      const decision = await this.broker.askHere(request, abort.signal);
      if (decision && !abort.signal.aborted) {
        await this.store.forward(request.threadId, { kind: "approve", requestId: request.requestId, decision });
      }
    } finally {
      this.asking.delete(request.requestId);
    }
  }
}
