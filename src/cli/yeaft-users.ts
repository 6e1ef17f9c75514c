// `switchyard yeaft user add NAME`: the password is asked on a terminal (not echoed) or read
// from stdin when piped; the user's agent secret is printed alone on the last line.
import { createInterface } from "node:readline/promises";
import { UserStore } from "../faces/yeaft/users.js";
import path from "node:path";

async function readPassword(): Promise<string> {
  if (!process.stdin.isTTY) {
    let text = "";
    for await (const chunk of process.stdin) text += String(chunk);
    return text.split("\n")[0]!.trim();
  }
  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: true });
  // Hide what is typed: readline writes through this, so mute it after the prompt.
  const output = rl as unknown as { _writeToOutput?: (s: string) => void };
  process.stdout.write("Password: ");
  output._writeToOutput = () => undefined;
  const password = await rl.question("");
  rl.close();
  process.stdout.write("\n");
  return password;
}

/** Adds the user to the data directory's users.json or, given a database, where a cluster's relays read users. */
export async function addUser(name: string, dataDir: string, storeUrl: string | undefined): Promise<number> {
  let close = async (): Promise<void> => undefined;
  try {
    let users: UserStore;
    if (storeUrl) {
      const { checkout, postgresPool, migratePostgres } = await import("../store/postgres-schema.js");
      const { PostgresFaceState } = await import("../store/postgres-face-state.js");
      const pool = await postgresPool(storeUrl);
      close = () => pool.end();
      await migratePostgres(pool);
      users = UserStore.inState(new PostgresFaceState(pool, () => checkout(pool, () => undefined), "0", 0));
    } else users = UserStore.inFile(path.join(dataDir, "users.json"));
    const user = await users.add(name, await readPassword());
    process.stdout.write(`user ${user.username} added. Its agents connect with this secret:\n${user.agentSecret}\n`);
    return 0;
  } catch (error) {
    process.stderr.write(`switchyard: ${(error as Error).message}\n`);
    return 1;
  } finally {
    await close();
  }
}
