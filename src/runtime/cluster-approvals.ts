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
  /** Questions this node's clients are being asked for other nodes' turns, by request id. */
  private readonly asking = new Map<string, AbortController>();

  constructor(
    private readonly store: Store,
    private readonly broker: ApprovalBroker,
    /** Whether the thread's turn runs in this process. */
    private readonly runsHere: (threadId: string) => boolean,
    private readonly log: Logger,
  ) {}

  /** Looks at every committed event: another node's approval requests, and their answers. */
  observe(event: RuntimeEvent): void {
    if (event.type === "approval.resolved") this.asking.get(event.data.requestId)?.abort();
    if (event.type !== "item.started" || event.data.item.type !== "approvalRequest") return;
    if (this.runsHere(event.threadId) || !this.broker.canAnswer(event.threadId)) return;
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
    void this.ask(request).catch((error: unknown) => this.log.warn({ err: error, requestId }, "could not answer another node's approval"));
  }

  private async ask(request: ApprovalRequest): Promise<void> {
    const abort = new AbortController();
    this.asking.set(request.requestId, abort);
    try {
      // Said and asked at once: the owner hears of it while the person reads the question.
      const seen = this.store.forward(request.threadId, { kind: "approvalSeen", requestId: request.requestId });
      const decision = await this.broker.askHere(request, abort.signal);
      await seen;
      if (decision && !abort.signal.aborted) {
        await this.store.forward(request.threadId, { kind: "approve", requestId: request.requestId, decision });
      }
    } finally {
      this.asking.delete(request.requestId);
    }
  }
}
