// Yeaft users: a username, a password hashed with scrypt (never stored plain), and the user's
// agent secret, which makes an agent that presents it that user's. Kept in one JSON file.
import { randomBytes, scryptSync, timingSafeEqual } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { writeFileDurably } from "../../durable-file.js";

export interface User {
  username: string;
  passwordHash: string;
  salt: string;
  agentSecret: string;
  createdAt: string;
}

const KEY_BYTES = 32;

function hash(password: string, salt: string): string {
  return scryptSync(password, Buffer.from(salt, "hex"), KEY_BYTES).toString("hex");
}

export class UserStore {
  constructor(private readonly file: string) {}

  private read(): User[] {
    return existsSync(this.file) ? (JSON.parse(readFileSync(this.file, "utf8")) as User[]) : [];
  }

  private write(users: User[]): void {
    mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    writeFileDurably(this.file, JSON.stringify(users, null, 2), 0o600);
  }

  /** Creates the user (or resets its password); returns the agent secret. */
  add(username: string, password: string): User {
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(username)) throw new Error("A username is 1–64 letters, digits, '.', '_' or '-'.");
    if (password.length < 8) throw new Error("The password must have at least 8 characters.");
    const users = this.read().filter((u) => u.username !== username);
    const salt = randomBytes(16).toString("hex");
    const user: User = {
      username,
      salt,
      passwordHash: hash(password, salt),
      agentSecret: randomBytes(24).toString("base64url"),
      createdAt: new Date().toISOString(),
    };
    this.write([...users, user]);
    return user;
  }

  /** The user, if the password is right (compared in constant time). */
  verify(username: string, password: string): User | undefined {
    const user = this.read().find((u) => u.username === username);
    // Hash even for unknown users, so timing does not tell which usernames exist.
    const expected = Buffer.from(user?.passwordHash ?? "00".repeat(KEY_BYTES), "hex");
    const actual = Buffer.from(hash(password, user?.salt ?? "00".repeat(16)), "hex");
    return user && timingSafeEqual(expected, actual) ? user : undefined;
  }

  byAgentSecret(secret: string): User | undefined {
    const given = Buffer.from(secret);
    return this.read().find((u) => {
      const own = Buffer.from(u.agentSecret);
      return own.length === given.length && timingSafeEqual(own, given);
    });
  }

  find(username: string): User | undefined {
    return this.read().find((u) => u.username === username);
  }

  first(): User | undefined {
    return this.read()[0];
  }
}
