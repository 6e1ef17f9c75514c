// Several servers on one PostgreSQL database: a client on one node and a watcher on another see
// the same events, in order, with no gap or duplicate, as the events table holds them; an idle
// thread moves to the node that starts its next turn; when the owner is killed mid-turn,
// another node fails the turn (ownerLost) and closes the cut item with its persisted text.
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import fs from "node:fs";
import path from "node:path";
import type { Pool } from "pg";
import { runCli, tempDir } from "../support/server-process.js";
import { eventually } from "../support/agentcraft.js";
import { loggedSeqs, postgresMissing, TestPostgres } from "../support/postgres.js";
import { startBalancer } from "../support/tcp-balancer.js";
import { FENCE_LOCK_CLASS, postgresPool } from "../../src/store/postgres-schema.js";
import { SwitchyardClient, type RpcError } from "../../src/client/index.js";
import {
  itemsOf,
  ManualApprovals,
  ModelScript,
  startTypedHarness,
  type TypedHarness,
  type TypedHarnessOptions,
} from "../support/typed-harness.js";

const DELTAS = 2_000;
/** How many times the kill test kills a turn's owner. */
const KILLS = 10;

/** The seq of every notification a client received for the thread, in arrival order. */
function recordSeqs(client: Pick<SwitchyardClient, "onEvent">, threadId: string): number[] {
  const seqs: number[] = [];
  client.onEvent((event) => {
    const params = (event as { params?: { threadId?: unknown; seq?: unknown } }).params;
    if (params?.threadId === threadId && typeof params.seq === "number") seqs.push(params.seq);
  });
  return seqs;
}

/** The pid of a harness's server (its data directory's lock names it). */
function serverPid(node: TypedHarness): number {
  return (JSON.parse(fs.readFileSync(path.join(node.dataDir, "switchyard.lock"), "utf8")) as { pid: number }).pid;
}

function assertInOrder(seqs: number[], logged: number[], who: string): void {
  assert.ok(seqs.length > 0, `${who} received events`);
  for (let i = 1; i < seqs.length; i++) assert.ok(seqs[i]! > seqs[i - 1]!, `${who}: seq ${seqs[i]} after ${seqs[i - 1]}`);
  const inLog = new Set(logged);
  assert.deepEqual(
    seqs.filter((s) => !inLog.has(s)),
    [],
    `${who} received only committed events`,
  );
}

/** Runs `work` while a transaction that ran `statement` stays open, holding what it took. */
async function whileTransactionHolds(db: Pool, statement: string, params: unknown[], work: () => Promise<void>): Promise<void> {
  const holder = await db.connect();
  try {
    await holder.query("BEGIN");
    await holder.query(statement, params);
    await work();
  } finally {
    await holder.query("COMMIT");
    holder.release();
  }
}

/**
 * Runs `work` while an open transaction holds the feed back: the nodes do not see what the
 * others commit meanwhile (a node reads the feed only below the oldest open transaction).
 */
const withFeedHeld = (db: Pool, work: () => Promise<void>): Promise<void> =>
  whileTransactionHolds(db, "SELECT pg_current_xact_id()", [], work);

/** Runs `work` while a node's fence lock is held, as another node's claim holds it: its commits wait. */
const withFenceHeld = (db: Pool, node: number, work: () => Promise<void>): Promise<void> =>
  whileTransactionHolds(db, "SELECT pg_advisory_xact_lock($1, $2)", [FENCE_LOCK_CLASS, node], work);

/** The thread got one forwarded command, and it was applied once. */
async function assertOneCommandAppliedOnce(db: Pool, threadId: string): Promise<void> {
  const { rows } = await db.query<{ applied: boolean }>(
    "SELECT applied_at IS NOT NULL AS applied FROM thread_commands WHERE thread_id = $1",
    [threadId],
  );
  assert.deepEqual(
    rows.map((r) => r.applied),
    [true],
    "one command, applied once",
  );
}

describe("a cluster: several app-servers on one PostgreSQL", { skip: postgresMissing() }, () => {
  let model: ModelScript;
  let postgres: TestPostgres;
  let databases = 0;
  const open: Array<TypedHarness | Pool> = [];
  before(async () => {
    model = await ModelScript.start();
    postgres = await TestPostgres.start();
  });
  afterEach(async () => {
    for (const thing of open.splice(0)) await ("client" in thing ? thing.close() : thing.end()).catch(() => undefined);
    model.assertConsumed();
  });
  after(async () => {
    postgres?.stop();
    await model?.fake.close();
  });

  async function cluster(
    nodes: number,
    args: string[] = [],
    options: Array<Partial<TypedHarnessOptions>> = [],
  ): Promise<{ nodes: TypedHarness[]; db: Pool; url: string }> {
    const url = postgres.createDatabase(`cluster${++databases}`);
    const started = await Promise.all(
      Array.from({ length: nodes }, (_, i) =>
        startTypedHarness({ model, ...options[i], args: ["--store", url, ...args, ...(options[i]?.args ?? [])] }),
      ),
    );
    const db = await postgresPool(url);
    open.push(...started, db);
    return { nodes: started, db, url };
  }

  /** Starts a turn whose model stream stays open after its one delta; resolves with its id once that delta arrived. */
  async function holdingTurn(node: TypedHarness, threadId: string, prompt: string): Promise<string> {
    model.enqueue({ kind: "response", text: ["holding "], holdOpen: true });
    // Waited for from before the start: the delta may come in the same read as the start's answer.
    const delta = node.client.waitFor("item/agentMessage/delta", (p) => p.threadId === threadId, 10_000);
    const turnId = await node.startTurn(threadId, prompt);
    await delta;
    return turnId;
  }

  /** Stops the node as an administrator does (SIGTERM); resolves once its client saw it go. */
  async function stopNode(node: TypedHarness): Promise<void> {
    const closed = node.client.waitFor("closed", () => true);
    process.kill(serverPid(node), "SIGTERM");
    await closed;
  }

  /** The last node alive stops with a turn running: the turn is cancelled, as on one server. */
  async function assertStopCancels(node: TypedHarness, db: Pool): Promise<void> {
    const threadId = await node.startThread();
    const turnId = await holdingTurn(node, threadId, "wait");
    await stopNode(node);
    const { rows } = await db.query<{ status: string }>("SELECT status FROM turns WHERE id = $1", [turnId]);
    assert.deepEqual(rows, [{ status: "cancelled" }]);
    assert.doesNotMatch(node.serverLog(), /handing running turns over/);
  }

  it("streams a turn to a watcher on another node: the same events, in order, none missing or repeated", async () => {
    const {
      nodes: [owner, watcher, late],
      db,
    } = await cluster(3);
    const threadId = await owner!.startThread();
    const ownerSeqs = recordSeqs(owner!.client, threadId);
    const watcherSeqs = recordSeqs(watcher!.client, threadId);
    await watcher!.client.request("thread/subscribe", { threadId });

    const text = Array.from({ length: DELTAS }, (_, i) => `d${i} `);
    model.enqueue({ kind: "response", text });
    const turnId = await owner!.startTurn(threadId, "stream");
    const seen = await watcher!.notification("turn/completed", (p) => p.turn.id === turnId, 30_000);
    await owner!.client.turnEnd(turnId);

    const logged = await loggedSeqs(db, threadId);
    assert.deepEqual(
      logged,
      Array.from({ length: logged.length }, (_, i) => i + 1),
      "seq is 1..N in the table",
    );
    assertInOrder(ownerSeqs, logged, "the owner's client");
    assertInOrder(watcherSeqs, logged, "the watcher");
    // Both clients received the same events after the thread's start (seq 1: the owner's client
    // had it as its thread/start answer; the watcher has it when its node read it after the
    // watcher subscribed).
    const afterStart = (seqs: number[]): number[] => seqs.filter((s) => s > 1);
    assert.deepEqual(afterStart(watcherSeqs), afterStart(ownerSeqs));
    assert.ok(logged.includes(seen.seq));
    const message = itemsOf(watcher!.completedItems(threadId), "agentMessage")[0];
    assert.equal(message?.payload.text, text.join(""));

    // A client that comes late, on a third node, catches up from the database: what the owner's client saw.
    const replayed = recordSeqs(late!.client, threadId);
    await late!.client.request("thread/subscribe", { threadId, afterSeq: 0 });
    await eventually(async () => (replayed.at(-1) === ownerSeqs.at(-1) ? true : undefined), "the replay");
    // (the thread's start, seq 1, the owner's client had as its thread/start answer)
    assert.deepEqual(
      replayed.filter((seq) => seq > 1),
      ownerSeqs.filter((seq) => seq > 1),
    );
    await assert.rejects(late!.client.request("thread/subscribe", { threadId, afterSeq: logged.length + 1 }), { code: -32600 });
  });

  it("moves an idle thread to the node that starts its next turn; the first node sees that turn", async () => {
    const {
      nodes: [first, second],
      db,
    } = await cluster(2);
    const threadId = await first!.startThread();
    model.enqueue({ kind: "response", text: "one" });
    assert.equal((await first!.runTurn(threadId, "first")).method, "turn/completed");

    model.enqueue({ kind: "response", text: "two" });
    const turnId = await second!.startTurn(threadId, "second");
    assert.equal((await second!.client.turnEnd(turnId)).method, "turn/completed");
    await first!.notification("turn/completed", (p) => p.turn.id === turnId, 10_000);

    const { rows } = await db.query<{ epoch: number; writers: number }>(
      `SELECT o.epoch, (SELECT count(DISTINCT writer) FROM events WHERE thread_id = $1)::int AS writers
       FROM thread_owners o WHERE o.thread_id = $1`,
      [threadId],
    );
    assert.deepEqual(rows[0], { epoch: 2, writers: 2 }, "claimed once by each node");
    const logged = await loggedSeqs(db, threadId);
    assert.deepEqual(
      logged,
      Array.from({ length: logged.length }, (_, i) => i + 1),
    );
    const read = (await first!.client.readThread(threadId)).thread;
    assert.deepEqual(
      read.turns?.map((t) => t.status),
      ["completed", "completed"],
    );
  });

  it("refuses a turn started on a node that has not yet seen another node take the thread, asking the model nothing; started again, it runs", async () => {
    const {
      nodes: [owner, other],
      db,
    } = await cluster(2);
    const threadId = await owner!.startThread();
    const { rows } = await db.query<{ node: number }>("SELECT node FROM thread_owners WHERE thread_id = $1", [threadId]);
    const modelRequests = model.fake.requests.length;
    // The owner does not see the other node take the idle thread.
    await withFeedHeld(db, async () => {
      await other!.client.request("thread/resume", { threadId });
      // The owner's commits wait while its fence lock is held: the turn's start is not committed,
      // and its history (the turns before it) can be read meanwhile.
      let refused!: Promise<unknown>;
      await withFenceHeld(db, rows[0]!.node, async () => {
        refused = owner!.client.request("turn/start", { threadId, input: [{ type: "text", text: "too soon" }] });
        // A turn that asked the model before its start was committed would have asked by now.
        const asked = model.fake.waitForRequests(modelRequests + 1).then(() => true);
        assert.equal(
          await Promise.race([asked, new Promise((resolve) => setTimeout(() => resolve(false), 1_500))]),
          false,
          "no model request",
        );
      });
      await assert.rejects(refused, { code: -32032 });
    });
    assert.equal(model.fake.requests.length, modelRequests, "no model request");
    model.enqueue({ kind: "response", text: "ran" });
    assert.equal((await owner!.runTurn(threadId, "again")).method, "turn/completed");
  });

  it("refuses changes made on a node that has not yet seen another node take the thread, and keeps that node's", async () => {
    const {
      nodes: [owner, other],
      db,
    } = await cluster(2);
    const [renamed, moded, paused, queued] = [
      await owner!.startThread(),
      await owner!.startThread(),
      await owner!.startThread(),
      await owner!.startThread(),
    ];
    const modelRequests = model.fake.requests.length;
    await withFeedHeld(db, async () => {
      for (const threadId of [renamed, moded, paused, queued]) await other!.client.request("thread/resume", { threadId });
      // Each is the owner's first write since the move: refused at its commit, the thread's
      // state is the other node's. (A second would claim the thread back, as any write may.)
      const refused = { code: -32032 };
      const request = owner!.client.request.bind(owner!.client);
      await assert.rejects(request("thread/rename", { threadId: renamed, displayName: "named too late" }), refused);
      await assert.rejects(request("thread/mode/set", { threadId: moded, mode: "plan" }), refused);
      await assert.rejects(request("thread/pause", { threadId: paused }), refused);
      await assert.rejects(request("turn/enqueue", { threadId: queued, input: [{ type: "text", text: "too soon" }] }), refused);
    });
    const read = async (threadId: string) => (await other!.client.request("thread/read", { threadId })).thread;
    assert.notEqual((await read(renamed)).displayName, "named too late");
    assert.notEqual((await read(moded)).mode, "plan");
    assert.equal((await read(paused)).status, "active");
    assert.deepEqual((await read(queued)).queuedInputs ?? [], []);
    assert.equal(model.fake.requests.length, modelRequests, "no turn started");
    // Made again, it holds.
    assert.equal((await owner!.client.request("thread/rename", { threadId: renamed, displayName: "named" })).thread.displayName, "named");
  });

  it("lets a client on another node steer and interrupt the turn the owner runs", async () => {
    const {
      nodes: [owner, other],
    } = await cluster(2);
    const threadId = await owner!.startThread();
    await other!.client.request("thread/subscribe", { threadId });
    model.enqueue({ kind: "response", text: ["working", " on it"], holdOpen: true });
    const turnId = await owner!.startTurn(threadId, "hang");
    await other!.client.waitFor("item/agentMessage/delta", (p) => p.delta === " on it", 10_000);

    const steered = await other!.client.request("turn/steer", {
      threadId,
      input: [{ type: "text", text: "also this" }],
      expectedTurnId: turnId,
    });
    assert.equal(steered.turnId, turnId);
    await assert.rejects(
      other!.client.request("turn/steer", { threadId, input: [{ type: "text", text: "x" }], expectedTurnId: "turn_other" }),
      {
        code: -32014,
      },
    );
    const interrupted = await other!.client.request("turn/interrupt", { threadId });
    assert.equal(interrupted.turn.id, turnId);
    assert.equal(interrupted.turn.status, "cancelled");
    assert.equal((await owner!.client.turnEnd(turnId)).method, "turn/cancelled");
  });

  it("queues input from a client on another node behind the turn the owner runs, which runs it next", async () => {
    const waiting = new ManualApprovals(); // holds the owner's turn until the test answers
    const {
      nodes: [owner, other],
    } = await cluster(2, [], [{ onApproval: waiting.handler }]);
    const threadId = await owner!.startThread();
    await other!.client.request("thread/subscribe", { threadId });
    model.enqueue({ kind: "response", toolCalls: [{ id: "call_hold", name: "bash", arguments: { command: "echo held" } }] });
    model.enqueue({ kind: "response", text: "first done" });
    const turnId = await owner!.startTurn(threadId, "first");
    const pending = await waiting.next();

    const text = (value: string) => [{ type: "text" as const, text: value }];
    const dropped = await other!.client.request("turn/enqueue", { threadId, input: text("taken back") });
    const kept = await other!.client.request("turn/enqueue", { threadId, input: text("next, please") });
    assert.equal(dropped.turn, undefined, "queued, not started: the owner's turn runs");
    assert.deepEqual(
      kept.queuedInputs.map((q) => q.id),
      [dropped.queuedInput!.id, kept.queuedInput!.id],
    );
    const left = await other!.client.request("turn/queue/remove", { threadId, queuedInputId: dropped.queuedInput!.id });
    assert.deepEqual(
      left.queuedInputs.map((q) => q.id),
      [kept.queuedInput!.id],
    );

    model.enqueue({ kind: "response", text: "second done" });
    const next = other!.client.waitFor("turn/started", (p) => p.threadId === threadId && p.turn.id !== turnId, 15_000);
    pending.answer("decline");
    assert.equal((await owner!.client.turnEnd(turnId)).method, "turn/completed");
    const started = await next;
    assert.equal((await other!.client.turnEnd(started.turn.id, 15_000)).method, "turn/completed");
    const lastRequest = JSON.stringify(model.fake.requests.at(-1)!.body);
    assert.match(lastRequest, /next, please/);
    assert.doesNotMatch(lastRequest, /taken back/);
  });

  it("changes a thread whose turn runs on another node through that node: name, settings, mode, pause, archive, delete", async () => {
    const {
      nodes: [owner, other],
      db,
    } = await cluster(2);
    const threadId = await owner!.startThread();
    const first = await holdingTurn(owner!, threadId, "hold");
    const request = other!.client.request.bind(other!.client);

    const renamed = owner!.client.waitFor("thread/renamed", (p) => p.threadId === threadId);
    assert.equal((await request("thread/rename", { threadId, displayName: "named elsewhere" })).thread.displayName, "named elsewhere");
    await renamed;
    const configured = await request("thread/config/update", { threadId, configuration: { model: "other-model" } });
    assert.equal(configured.thread.configuration?.model, "other-model");
    assert.equal((await request("thread/mode/set", { threadId, mode: "plan" })).thread.mode, "plan");
    assert.equal((await request("thread/pause", { threadId })).thread.status, "paused");
    assert.equal((await request("thread/unpause", { threadId })).thread.status, "active");
    // Archiving cancels the running turn, as on one server.
    assert.equal((await request("thread/archive", { threadId })).thread.status, "archived");
    assert.equal((await owner!.client.turnEnd(first)).method, "turn/cancelled");
    // Unarchiving took the idle thread to the other node: the owner starts the next turn once it
    // has seen that (sooner, its start would be refused, retryably, as the node learns of it).
    const seen = owner!.client.waitFor("thread/statusChanged", (p) => p.threadId === threadId && p.status === "active");
    assert.equal((await request("thread/unarchive", { threadId })).thread.status, "active");
    await seen;

    // Deleting interrupts the running turn first, and the owner's clients are told it ended
    // before the thread goes. (Another node's may not be: a turn deleted before that node
    // delivered its end has nothing left to show there, and thread/deleted follows.)
    const second = await holdingTurn(owner!, threadId, "hold again");
    const deleted = owner!.client.waitFor("thread/deleted", (p) => p.threadId === threadId);
    assert.deepEqual(await request("thread/delete", { threadId }), { deleted: true });
    await deleted;
    assert.equal((await owner!.client.turnEnd(second)).method, "turn/cancelled");
    const { rows } = await db.query<{ status: string }>("SELECT status FROM turns WHERE id = $1", [second]);
    assert.deepEqual(rows, [], "the turn went with its thread");
    await assert.rejects(owner!.client.request("thread/read", { threadId }), { code: -32010 });
  });

  it("asks an approval of a turn on one node to a client on another, and runs the command on its answer", async () => {
    const {
      nodes: [owner, other],
    } = await cluster(2, [], [{ capabilities: { approvalSupport: false } }, { onApproval: () => "accept" }]);
    const threadId = await owner!.startThread();
    await other!.client.request("thread/subscribe", { threadId });
    model.enqueue({ kind: "response", toolCalls: [{ id: "call_x", name: "bash", arguments: { command: "echo approved-elsewhere" } }] });
    model.enqueue({ kind: "response", text: "done" });
    const end = await owner!.runTurn(threadId, "run it");
    assert.equal(end.method, "turn/completed");
    assert.equal(other!.approvals.length, 1, "the other node's client was asked");
    assert.equal(other!.approvals[0]!.operation, "echo approved-elsewhere");
    const resolved = await owner!.notification("item/approval/resolved", (p) => p.threadId === threadId);
    assert.deepEqual([resolved.decision, resolved.source], ["accept", "client"]);
    const output = owner!
      .notifications("item/commandExecution/outputDelta", threadId)
      .map((p) => p.delta)
      .join("");
    assert.match(output, /approved-elsewhere/);
  });

  it("asks a client that subscribes on another node after the question went out", async () => {
    const waiting = new ManualApprovals(); // the owner's client is asked, and does not answer
    const {
      nodes: [owner, other],
    } = await cluster(2, [], [{ onApproval: waiting.handler }, { onApproval: () => "accept" }]);
    const threadId = await owner!.startThread();
    model.enqueue({ kind: "response", toolCalls: [{ id: "call_late", name: "bash", arguments: { command: "echo asked-late" } }] });
    model.enqueue({ kind: "response", text: "done" });
    const turnId = await owner!.startTurn(threadId, "run it");
    const pending = await waiting.next();
    await other!.client.request("thread/subscribe", { threadId });
    assert.equal((await owner!.client.turnEnd(turnId, 30_000)).method, "turn/completed");
    assert.deepEqual(
      other!.approvals.map((r) => r.requestId),
      [pending.request.requestId],
    );
    const resolved = await owner!.notification("item/approval/resolved", (p) => p.threadId === threadId);
    assert.deepEqual([resolved.decision, resolved.source], ["accept", "client"]);
  });

  it("continues a killed owner's turn on another node: its running command fails ownerLost, the model is asked again", async () => {
    const {
      nodes: [owner, watcher],
      db,
    } = await cluster(2);
    const threadId = await owner!.startThread({ configuration: { approvalPolicy: "autoApprove" } });
    await watcher!.client.request("thread/subscribe", { threadId });
    model.enqueue({
      kind: "response",
      text: "Let me look. ",
      toolCalls: [{ id: "call_slow", name: "bash", arguments: { command: "echo started; sleep 5" } }],
    });
    const turnId = await owner!.startTurn(threadId, "run the slow thing");
    await watcher!.client.waitFor("item/commandExecution/outputDelta", (p) => p.delta.includes("started"), 10_000);

    model.enqueue({ kind: "response", text: "carried on" });
    await owner!.crashServer();
    const end = await watcher!.client.turnEnd(turnId, 15_000);
    assert.equal(end.method, "turn/completed", `the turn completed on the node that took it over: ${JSON.stringify(end.params)}`);

    const items = watcher!.completedItems(threadId);
    const result = itemsOf(items, "toolResult").find((i) => i.payload.callId === "call_slow");
    assert.equal(result?.payload.success, false);
    assert.match(String(result!.payload.output), /ownerLost/);
    assert.deepEqual(
      itemsOf(items, "agentMessage").map((i) => i.payload.text),
      ["Let me look. ", "carried on"],
    );
    // The model was asked again with everything so far: the input, its first reply, the failed call.
    const asked = JSON.stringify(model.fake.requests.at(-1)!.body);
    assert.match(asked, /run the slow thing/);
    assert.match(asked, /ownerLost/);
    const logged = await loggedSeqs(db, threadId);
    assert.deepEqual(
      logged,
      Array.from({ length: logged.length }, (_, i) => i + 1),
    );
    const read = (await watcher!.client.readThread(threadId)).thread;
    assert.deepEqual(
      read.turns?.map((t) => t.status),
      ["completed"],
    );
  });

  it("kills the owner mid-stream 10 times; each turn is continued by another node, and every client's events are the table's", async () => {
    const { nodes, db, url } = await cluster(3);
    const [, watcher, third] = nodes;
    let owner = nodes[0]!;
    for (let round = 1; round <= KILLS; round++) {
      const threadId = await owner.startThread();
      const ownerSeqs = recordSeqs(owner.client, threadId);
      const watcherSeqs = recordSeqs(watcher!.client, threadId);
      await watcher!.client.request("thread/subscribe", { threadId, afterSeq: 0 });
      const text = Array.from({ length: DELTAS }, (_, i) => `r${round}d${i} `);
      model.enqueue({ kind: "response", text, chunkDelayMs: 1 });
      model.enqueue({ kind: "response", text: `round ${round} carried on` });
      const turnId = await owner.startTurn(threadId, "stream");
      await watcher!.client.waitFor("item/agentMessage/delta", (p) => p.delta === text[DELTAS / 4], 20_000);

      await owner.crashServer();
      const end = await watcher!.client.turnEnd(turnId, 20_000);
      assert.equal(end.method, "turn/completed", `round ${round}: ${JSON.stringify(end.params)}`);
      const [cut, carried, ...more] = itemsOf(watcher!.completedItems(threadId), "agentMessage").map((i) => String(i.payload.text));
      assert.ok(
        cut && cut.length >= text.slice(0, DELTAS / 4 + 1).join("").length && text.join("").startsWith(cut),
        `round ${round}: the cut message keeps what was streamed`,
      );
      assert.equal(carried, `round ${round} carried on`);
      assert.deepEqual(more, []);

      const logged = await loggedSeqs(db, threadId);
      assert.deepEqual(
        logged,
        Array.from({ length: logged.length }, (_, i) => i + 1),
        `round ${round}: seq is 1..N in the table`,
      );
      assertInOrder(ownerSeqs, logged, `round ${round}: the killed owner's client`);
      assertInOrder(watcherSeqs, logged, `round ${round}: the watcher`);
      // What the table holds, replayed to a client of the third node, is what the watcher got.
      const replayed = recordSeqs(third!.client, threadId);
      await third!.client.request("thread/subscribe", { threadId, afterSeq: 0 });
      await eventually(async () => (replayed.at(-1) === watcherSeqs.at(-1) ? true : undefined), "the replay");
      // (seq 1, the thread's start, the third node's client may have had already: it is broadcast)
      const afterStart = (seqs: number[]): number[] => seqs.filter((seq) => seq > 1);
      assert.deepEqual(afterStart(replayed), afterStart(watcherSeqs), `round ${round}: the watcher's events are the table's`);
      await third!.client.request("thread/unsubscribe", { threadId });

      // A new node takes the killed one's place.
      owner = await startTypedHarness({ model, args: ["--store", url] });
      open.push(owner);
    }
  });

  it("a node that stops hands its running turn to a node that stays, which continues it with all that was streamed", async () => {
    const {
      nodes: [owner, watcher],
      db,
    } = await cluster(2);
    const threadId = await owner!.startThread();
    await watcher!.client.request("thread/subscribe", { threadId });
    const text = Array.from({ length: 100 }, (_, i) => `s${i} `);
    model.enqueue({ kind: "response", text, holdOpen: true });
    model.enqueue({ kind: "response", text: "carried on" });
    const turnId = await owner!.startTurn(threadId, "stream, then wait");
    await watcher!.client.waitFor("item/agentMessage/delta", (p) => p.delta === text.at(-1), 10_000);

    await stopNode(owner!);
    const end = await watcher!.client.turnEnd(turnId, 20_000);
    assert.equal(end.method, "turn/completed", JSON.stringify(end.params));
    assert.deepEqual(
      itemsOf(watcher!.completedItems(threadId), "agentMessage").map((i) => i.payload.text),
      [text.join(""), "carried on"],
      "the stopped node's message keeps every delta; the turn goes on after it",
    );
    const logged = await loggedSeqs(db, threadId);
    assert.deepEqual(
      logged,
      Array.from({ length: logged.length }, (_, i) => i + 1),
    );
    assert.match(owner!.serverLog(), /handing running turns over to the cluster's other nodes/);
  });

  for (const via of ["given every node's URL", "connected through a load balancer"] as const)
    it(`a client ${via} follows a turn across the stop of its node, with no gap or duplicate`, async () => {
      const { nodes, db } = await cluster(2, ["--listen", "stdio://", "--listen", "ws://127.0.0.1:0"]);
      const urls = await Promise.all(nodes.map((node) => node.websocketUrl()));
      // The balancer sends the first connection to the first node, and the reconnection past it once it is gone.
      const balancer = via === "connected through a load balancer" ? await startBalancer(urls.map((url) => new URL(url))) : undefined;
      const client = await SwitchyardClient.connect(
        { transport: "websocket", url: balancer ? `ws://127.0.0.1:${balancer.port}/ws` : urls },
        { reconnect: { initialDelayMs: 20, maxDelayMs: 200, maxAttempts: 20 } },
      );
      try {
        const workspace = nodes[0]!.workspace;
        const { thread } = await client.startThread({ identity: { workspacePath: workspace }, historyMode: "server" });
        const seqs = recordSeqs(client, thread.id);
        const text = Array.from({ length: 100 }, (_, i) => `c${i} `);
        model.enqueue({ kind: "response", text, holdOpen: true });
        model.enqueue({ kind: "response", text: "carried on" });
        const { turn } = await client.startTurn(thread.id, "stream, then wait");
        await eventually(async () => (seqs.length > 100 ? true : undefined), "the deltas");

        const reconnected = new Promise((resolve) => client.on("reconnected", resolve));
        process.kill(serverPid(nodes[0]!), "SIGTERM"); // the node the client is on: the first URL
        await reconnected;
        const end = await client.turnEnd(turn.id, 20_000);
        assert.equal(end.method, "turn/completed", JSON.stringify(end.params));
        const logged = await loggedSeqs(db, thread.id);
        assert.deepEqual(seqs, logged.slice(logged.indexOf(seqs[0]!)), "every event once, in order, across the move");
        const { thread: read } = await client.readThread(thread.id);
        const messages = read.turns?.[0]?.items?.filter((item) => item.type === "agentMessage").map((item) => item.payload.text);
        assert.deepEqual(messages, [text.join(""), "carried on"]);
      } finally {
        await client.close();
        await balancer?.close();
      }
    });

  it("a node that stops with no other node alive cancels its running turn, as one server does", async () => {
    const {
      nodes: [only],
      db,
    } = await cluster(1);
    await assertStopCancels(only!, db);
  });

  it("a node that stops after every other node has gone cancels its running turn too", async () => {
    const {
      nodes: [gone, last],
      db,
    } = await cluster(2);
    await stopNode(gone!); // its row stays in `nodes`, stopped: no node to hand a turn to
    await assertStopCancels(last!, db);
  });

  it("cluster status and doctor tell a dead node from a live one", async () => {
    const {
      nodes: [dead, live],
      url,
    } = await cluster(2);
    await dead!.startThread(); // an idle thread: the dead node still owns it, so it is listed
    const deadPid = serverPid(dead!);
    await dead!.crashServer();
    type Listed = { pid: number; alive: boolean; threads: number };
    const nodes = await eventually(
      async () => {
        const status = runCli("cluster", "status", "--store", url, "--json");
        assert.equal(status.status, 0, status.stderr);
        const listed = (JSON.parse(status.stdout) as { nodes: Listed[] }).nodes;
        return listed.some((n) => !n.alive) ? listed : undefined;
      },
      "the killed node listed as not alive",
      10_000,
    );
    assert.deepEqual(
      nodes.map((n) => [n.pid === deadPid ? "dead" : n.pid === serverPid(live!) ? "live" : n.pid, n.alive, n.threads]).sort(),
      [
        ["dead", false, 1],
        ["live", true, 0],
      ],
    );
    const doctor = runCli("doctor", "--data-dir", tempDir("data"), "--store", url);
    assert.match(doctor.stdout, /opens, schema version \d+ \(1 thread; 1 node running\)/);
  });

  it("with --failover fail, fails a killed owner's turn on another node (ownerLost), closing the cut message with its persisted text", async () => {
    const {
      nodes: [owner, watcher],
      db,
      url,
    } = await cluster(2, ["--failover", "fail"]);
    const threadId = await owner!.startThread();
    await watcher!.client.request("thread/subscribe", { threadId });
    const watcherSeqs = recordSeqs(watcher!.client, threadId);
    const text = Array.from({ length: 200 }, (_, i) => `w${i} `);
    model.enqueue({ kind: "response", text, holdOpen: true });
    const turnId = await owner!.startTurn(threadId, "stream, then hang");
    // Every delta has reached the watcher: they are committed.
    await watcher!.client.waitFor("item/agentMessage/delta", (p) => p.delta === text.at(-1), 10_000);

    const killedAt = Date.now();
    await owner!.crashServer();
    const failed = await watcher!.notification("turn/failed", (p) => p.turn.id === turnId, 15_000);
    const takeoverMs = Date.now() - killedAt;
    assert.equal(failed.error.code, "ownerLost");
    assert.ok(takeoverMs < 10_000, `taken over in ${takeoverMs} ms`);
    const message = itemsOf(watcher!.completedItems(threadId), "agentMessage")[0];
    assert.equal(message?.payload.text, text.join(""), "the cut message keeps its streamed text");

    const logged = await loggedSeqs(db, threadId);
    assert.deepEqual(
      logged,
      Array.from({ length: logged.length }, (_, i) => i + 1),
    );
    assertInOrder(watcherSeqs, logged, "the watcher");
    assert.equal(watcherSeqs.at(-1), logged.at(-1));

    // `cluster status`: the killed node is gone, the other owns the thread now.
    const status = runCli("cluster", "status", "--store", url, "--json");
    assert.equal(status.status, 0, status.stderr);
    const nodes = (JSON.parse(status.stdout) as { nodes: Array<{ alive: boolean; threads: number; runningTurns: number }> }).nodes;
    assert.deepEqual(
      nodes.map((n) => [n.alive, n.threads, n.runningTurns]),
      [[true, 1, 0]],
      "only the live node is listed (the dead one owns nothing any more)",
    );
  });

  it("fences a hung owner: past the lease another node takes the turn over, and once resumed the old owner writes nothing", async () => {
    const {
      nodes: [owner, watcher],
      db,
    } = await cluster(2, ["--lease-ttl-ms", "2000", "--failover", "fail"]);
    const threadId = await owner!.startThread();
    await watcher!.client.request("thread/subscribe", { threadId });
    // Deltas keep coming for seconds: the hung owner finds more in its socket when it resumes.
    const text = Array.from({ length: 150 }, (_, i) => `h${i} `);
    model.enqueue({ kind: "response", text, chunkDelayMs: 20 });
    const turnId = await owner!.startTurn(threadId, "stream slowly");
    await watcher!.client.waitFor("item/agentMessage/delta", (p) => p.delta === text[10], 10_000);

    const pid = serverPid(owner!);
    process.kill(pid, "SIGSTOP");
    let failed;
    try {
      failed = await watcher!.notification("turn/failed", (p) => p.turn.id === turnId, 15_000);
      // The hung owner's lock connection is ended (it held its lock, and the notification queue).
      const holders = () =>
        db.query(
          `SELECT l.pid FROM pg_locks l JOIN nodes n ON l.locktype = 'advisory' AND l.objid = n.num::oid AND l.objsubid = 2 AND l.granted
           WHERE n.pid = $1 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
          [pid],
        );
      await eventually(async () => ((await holders()).rows.length === 0 ? true : undefined), "the hung owner's lock connection to end");
    } finally {
      process.kill(pid, "SIGCONT");
    }
    assert.equal(failed.error.code, "ownerLost");
    const claimed = await loggedSeqs(db, threadId);

    // The resumed owner reads the rest of its stream, is refused, and hears of the takeover.
    await owner!.notification("turn/failed", (p) => p.turn.id === turnId, 15_000);
    await eventually(
      async () => (/turn stopped here: another node of the cluster takes the thread over/.test(owner!.serverLog()) ? true : undefined),
      "the old owner to stop its turn",
    );
    const logged = await loggedSeqs(db, threadId);
    assert.deepEqual(logged, claimed, "nothing was written after the takeover");
    assert.deepEqual(
      logged,
      Array.from({ length: logged.length }, (_, i) => i + 1),
    );
    // The old owner is a live node again: it can run the thread's next turn (the thread moves back).
    model.enqueue({ kind: "response", text: "after" });
    assert.equal((await owner!.runTurn(threadId, "again")).method, "turn/completed");
  });

  it("answers a command sent to a hung owner from the node that takes the thread over, once", async () => {
    const {
      nodes: [owner, other],
      db,
    } = await cluster(2, ["--lease-ttl-ms", "2000", "--failover", "fail"]);
    const threadId = await owner!.startThread();
    await other!.client.request("thread/subscribe", { threadId });
    model.enqueue({ kind: "response", text: ["hanging "], holdOpen: true });
    const turnId = await owner!.startTurn(threadId, "hang");
    await other!.client.waitFor("item/agentMessage/delta", (p) => p.threadId === threadId, 10_000);

    const pid = serverPid(owner!);
    process.kill(pid, "SIGSTOP");
    try {
      // Forwarded to the owner, which does not answer; the node that takes the thread over (the
      // turn fails ownerLost there) applies it: no turn runs any more.
      await assert.rejects(other!.client.request("turn/interrupt", { threadId, turnId }), (error: RpcError) => {
        assert.match(error.message, /not running/);
        return true;
      });
    } finally {
      process.kill(pid, "SIGCONT");
    }
    await assertOneCommandAppliedOnce(db, threadId);
    const ends = await db.query(
      "SELECT type FROM events WHERE thread_id = $1 AND type IN ('turn.completed', 'turn.failed', 'turn.cancelled')",
      [threadId],
    );
    assert.deepEqual(
      ends.rows.map((r: { type: string }) => r.type),
      ["turn.failed"],
    );
  });

  it("applies an interrupt sent to a hung owner to the turn the node that takes it over continues, once", async () => {
    const {
      nodes: [owner, other],
      db,
    } = await cluster(2, ["--lease-ttl-ms", "2000"]);
    const threadId = await owner!.startThread();
    await other!.client.request("thread/subscribe", { threadId });
    model.enqueue({ kind: "response", text: ["hanging "], holdOpen: true });
    model.enqueue({ kind: "response", text: ["continued "], holdOpen: true }); // the takeover's model call
    const turnId = await owner!.startTurn(threadId, "hang");
    await other!.client.waitFor("item/agentMessage/delta", (p) => p.threadId === threadId, 10_000);

    const pid = serverPid(owner!);
    process.kill(pid, "SIGSTOP");
    try {
      // Forwarded to the owner, which does not answer; the node that takes the turn over and
      // continues it applies the interrupt to that turn: the command was not lost in between.
      const answer = await other!.client.request("turn/interrupt", { threadId, turnId }).then(
        (result) => result,
        (error: RpcError) => error,
      );
      if ("code" in answer) assert.equal(answer.code, -32032, "a retryable notOwner when the takeover took longer"); // still applied, below
      assert.equal((await other!.client.turnEnd(turnId, 20_000)).method, "turn/cancelled");
    } finally {
      process.kill(pid, "SIGCONT");
    }
    await assertOneCommandAppliedOnce(db, threadId);
  });

  it("offers a turn over a node's --max-running-turns to a node with a slot free, which runs it", async () => {
    const {
      nodes: [busy],
      db,
    } = await cluster(2, ["--max-running-turns", "1"]);
    const [first, second] = [await busy!.startThread(), await busy!.startThread()];
    const firstTurn = await holdingTurn(busy!, first, "hold the only slot");

    model.enqueue({ kind: "response", text: "ran elsewhere" });
    const secondTurn = await busy!.startTurn(second, "wait for a slot");
    const end = await busy!.client.turnEnd(secondTurn, 20_000);
    assert.equal(end.method, "turn/completed", JSON.stringify(end.params));
    assert.deepEqual(
      itemsOf(busy!.completedItems(second), "agentMessage").map((i) => i.payload.text),
      ["ran elsewhere"],
    );
    const writers = async (threadId: string): Promise<number[]> =>
      (
        await db.query<{ writer: number }>("SELECT DISTINCT writer FROM events WHERE thread_id = $1 AND type = 'item.started'", [threadId])
      ).rows.map((r) => r.writer);
    const [firstWriters, secondWriters] = [await writers(first), await writers(second)];
    assert.equal(secondWriters.length, 1);
    assert.notDeepEqual(secondWriters, firstWriters, "the second turn ran on the other node");
    assert.equal((await db.query("SELECT * FROM turn_queue")).rowCount, 0, "the offer was taken");

    await busy!.client.request("turn/interrupt", { threadId: first });
    assert.equal((await busy!.client.turnEnd(firstTurn)).method, "turn/cancelled");
  });

  it("cluster status counts a node's running turns and the ones waiting for a slot", async () => {
    const {
      nodes: [node],
      url,
    } = await cluster(1, ["--max-running-turns", "1"]);
    const [first, second] = [await node!.startThread(), await node!.startThread()];
    const firstTurn = await holdingTurn(node!, first, "hold the only slot");
    const secondTurn = await node!.startTurn(second, "wait for the slot");

    const status = (...args: string[]) => runCli("cluster", "status", "--store", url, ...args);
    const nodes = (JSON.parse(status("--json").stdout) as { nodes: Array<{ threads: number; runningTurns: number; waitingTurns: number }> })
      .nodes;
    assert.deepEqual(
      nodes.map((n) => [n.threads, n.runningTurns, n.waitingTurns]),
      [[2, 2, 1]],
      "both turns are started (running, for their clients); one waits for the slot",
    );
    const [header, row] = status().stdout.split("\n");
    assert.match(header!, /THREADS +RUNNING +WAITING$/);
    assert.match(row!, / 2 +2 +1$/);

    await node!.client.request("turn/interrupt", { threadId: second });
    assert.equal((await node!.client.turnEnd(secondTurn)).method, "turn/cancelled");
    await node!.client.request("turn/interrupt", { threadId: first });
    assert.equal((await node!.client.turnEnd(firstTurn)).method, "turn/cancelled");
  });

  it("runs and takes over only threads whose workspace a node reaches (--workspace-root)", async () => {
    const elsewhere = tempDir("elsewhere");
    const {
      nodes: [owner, outside, inside],
      db,
    } = await cluster(3, ["--failover", "fail"], [{}, { args: ["--workspace-root", elsewhere] }, {}]);
    const threadId = await owner!.startThread();
    await assert.rejects(outside!.client.request("turn/start", { threadId, input: [{ type: "text", text: "here?" }] }), {
      code: -32032,
      message: /outside its --workspace-root/,
    });
    await assert.rejects(outside!.startThread({ identity: { workspacePath: owner!.workspace } }), { code: -32602 });

    await inside!.client.request("thread/subscribe", { threadId });
    model.enqueue({ kind: "response", text: ["cut", " here"], holdOpen: true });
    const turnId = await owner!.startTurn(threadId, "hang");
    await inside!.client.waitFor("item/agentMessage/delta", (p) => p.delta === " here", 10_000);
    await owner!.crashServer();
    await inside!.notification("turn/failed", (p) => p.turn.id === turnId, 15_000);
    const { rows } = await db.query<{ pid: number }>(
      "SELECT n.pid FROM thread_owners o JOIN nodes n ON n.num = o.node WHERE o.thread_id = $1",
      [threadId],
    );
    assert.deepEqual(rows, [{ pid: serverPid(inside!) }], "the node that reaches the workspace took it over");
  });
});
