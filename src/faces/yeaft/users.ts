// Yeaft users: a username, a password hashed with scrypt (never stored plain), and the user's
// agent secret, which makes an agent that presents it that user's. Kept in one JSON file, or in
// the store when several relay processes share it.
import { randomBytes, scryptSync, timingSafeEqual } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { writeFileDurably } from "../../durable-file.js";
import type { FaceState } from "../../store/face-state.js";

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

/** Where users are kept: a file, or the store's face state (shared by every relay of a cluster). */
interface UserBook {
  all(): Promise<User[]>;
  get(username: string): Promise<User | undefined>;
  put(user: User): Promise<void>;
}

class UsersFile implements UserBook {
  constructor(private readonly file: string) {}

  all(): Promise<User[]> {
    return Promise.resolve(this.read());
  }

  get(username: string): Promise<User | undefined> {
    return Promise.resolve(this.read().find((u) => u.username === username));
  }

  /** Read and written in one go: two adds never interleave. */
  put(user: User): Promise<void> {
    const others = this.read().filter((u) => u.username !== user.username);
    mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    writeFileDurably(this.file, JSON.stringify([...others, user], null, 2), 0o600);
    return Promise.resolve();
  }

  private read(): User[] {
    return existsSync(this.file) ? (JSON.parse(readFileSync(this.file, "utf8")) as User[]) : [];
  }
}

const USERS = "yeaft/users";

class SharedUsers implements UserBook {
  constructor(private readonly state: FaceState) {}

  async all(): Promise<User[]> {
    return (await this.state.listRecords(USERS)).map((r) => JSON.parse(r.value) as User);
  }

  async get(username: string): Promise<User | undefined> {
    const record = await this.state.getRecord(USERS, username);
    return record && (JSON.parse(record.value) as User);
  }

  async put(user: User): Promise<void> {
    await this.state.putRecord(USERS, user.username, JSON.stringify(user));
  }
}

export class UserStore {
  private constructor(private readonly book: UserBook) {}

  /** Users in a JSON file (one relay process). */
  static inFile(file: string): UserStore {
    return new UserStore(new UsersFile(file));
  }

  /** Users in the store, where every relay process of a cluster reads them. */
  static inState(state: FaceState): UserStore {
    return new UserStore(new SharedUsers(state));
  }

  /** Users in the store, those of `file` added unless the store has them (a relay moved onto a cluster). */
  static async shared(state: FaceState, file: string): Promise<UserStore> {
    for (const user of await new UsersFile(file).all())
      await state.putRecord(USERS, user.username, JSON.stringify(user), { ifAbsent: true });
    return UserStore.inState(state);
  }

  /** Creates the user (or resets its password); returns the agent secret. */
  async add(username: string, password: string): Promise<User> {
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(username)) throw new Error("A username is 1–64 letters, digits, '.', '_' or '-'.");
    if (password.length < 8) throw new Error("The password must have at least 8 characters.");
    const salt = randomBytes(16).toString("hex");
    const user: User = {
      username,
      salt,
      passwordHash: hash(password, salt),
      agentSecret: randomBytes(24).toString("base64url"),
      createdAt: new Date().toISOString(),
    };
    await this.book.put(user);
    return user;
  }

  /** The user, if the password is right (compared in constant time). */
  async verify(username: string, password: string): Promise<User | undefined> {
    const user = await this.book.get(username);
    // Hash even for unknown users, so timing does not tell which usernames exist.
    const expected = Buffer.from(user?.passwordHash ?? "00".repeat(KEY_BYTES), "hex");
    const actual = Buffer.from(hash(password, user?.salt ?? "00".repeat(16)), "hex");
    return user && timingSafeEqual(expected, actual) ? user : undefined;
  }

  async byAgentSecret(secret: string): Promise<User | undefined> {
    const given = Buffer.from(secret);
    return (await this.book.all()).find((u) => {
      const own = Buffer.from(u.agentSecret);
      return own.length === given.length && timingSafeEqual(own, given);
    });
  }

  find(username: string): Promise<User | undefined> {
    return this.book.get(username);
  }

  async first(): Promise<User | undefined> {
    return (await this.book.all())[0];
  }
}
