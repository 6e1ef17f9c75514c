// The Yeaft face (spec 002): a relay between browsers and agents (`switchyard yeaft relay`) and
// an agent driver that runs the browser's conversations on this runtime (`switchyard yeaft
// agent`), each a listener of its own. Loaded on use.
import type { Face } from "../face.js";

export interface YeaftListenOptions {
  relay?: import("./relay.js").RelayServerOptions;
  agent?: import("./driver.js").DriverOptions;
}

export const yeaftFace: Face = {
  name: "yeaft",
  listen: async (ctx) => {
    const opts = ctx.options as YeaftListenOptions;
    const log = ctx.log.child({ face: "yeaft" });
    const relay = opts.relay ? await (await import("./relay.js")).startRelay(opts.relay, ctx.runtime.faceState, log) : undefined;
    let driver: import("./driver.js").AgentDriver | undefined;
    if (opts.agent) {
      const { AgentDriver } = await import("./driver.js");
      // Both in one process: the local agent belongs to the relay's first user.
      const secret = opts.agent.secret || (await relay?.users.first())?.agentSecret;
      if (!secret)
        throw new Error(
          "The agent needs its owner's secret (--secret or YEAFT_AGENT_SECRET), or a user added with `switchyard yeaft user add`.",
        );
      const server = opts.agent.server || (relay ? `ws://127.0.0.1:${relay.port}/` : "");
      driver = new AgentDriver(ctx.runtime, { ...opts.agent, server, secret }, log);
      driver.start();
    }
    return {
      ...(relay ? { url: relay.url } : {}),
      close: async () => {
        driver?.close();
        await relay?.close();
      },
    };
  },
};
