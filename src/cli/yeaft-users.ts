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

export async function addUser(name: string, dataDir: string): Promise<number> {
  try {
    const user = new UserStore(path.join(dataDir, "users.json")).add(name, await readPassword());
    process.stdout.write(`user ${user.username} added. Its agents connect with this secret:\n${user.agentSecret}\n`);
    return 0;
  } catch (error) {
    process.stderr.write(`switchyard: ${(error as Error).message}\n`);
    return 1;
  }
}
