// `agentcraft agent chat <name>`: a terminal chat, the agent's answer streamed as it comes. It
// leases a session of the daemon's agent, starting the agent first (and stopping it after) when
// it was not running. `exit`, `quit` or Ctrl+C ends it.
import { createInterface } from "node:readline/promises";
import { DaemonClient, describeError } from "./client.js";

export async function chat(socketPath: string, name: string): Promise<void> {
  const client = await DaemonClient.connect(socketPath, {
    onNotification: (method, params) => {
      if (method !== "session.update") return;
      const update = (params as { update?: { sessionUpdate?: string; content?: { type?: string; text?: string }; title?: string } }).update;
      if (update?.sessionUpdate === "agent_message_chunk" && update.content?.type === "text")
        process.stdout.write(update.content.text ?? "");
      else if (update?.sessionUpdate === "tool_call") process.stdout.write(`\n[${update.title ?? "tool"}]\n`);
    },
    // A permission the agent asks for: this terminal answers.
    onRequest: async (method, params) => {
      if (method !== "session.requestPermission") throw new Error(`unexpected ${method}`);
      const { toolCall } = params as { toolCall: { title?: string } };
      const rl = createInterface({ input: process.stdin, output: process.stdout });
      const answer = (await rl.question(`\nAllow ${toolCall.title ?? "this tool call"}? [y/N] `)).trim().toLowerCase();
      rl.close();
      return { outcome: { outcome: "selected", optionId: answer === "y" || answer === "yes" ? "allow_once" : "reject_once" } };
    },
  });
  const status = await client.call("agent.status", { name });
  const startedHere = status.processOwnership !== "managed";
  if (startedHere) await client.call("agent.start", { name });
  const lease = await client.call("session.create", { agentName: name, clientId: `chat-${process.pid}` });
  process.stdout.write(`Chatting with ${name} (session ${lease.sessionId}). Type exit to leave.\n`);
  const rl = createInterface({ input: process.stdin, output: process.stdout, prompt: "> " });
  rl.on("SIGINT", () => rl.close());
  rl.prompt();
  try {
    for await (const line of rl) {
      const text = line.trim();
      if (text === "exit" || text === "quit") break;
      if (text) {
        try {
          await client.call("session.prompt", { sessionId: lease.sessionId, text });
          process.stdout.write("\n");
        } catch (error) {
          process.stderr.write(`agentcraft: ${describeError(error)}\n`);
        }
      }
      rl.prompt();
    }
  } finally {
    rl.close();
    await client.call("session.close", { sessionId: lease.sessionId }).catch(() => undefined);
    if (startedHere) await client.call("agent.stop", { name }).catch(() => undefined);
    client.close();
  }
}
