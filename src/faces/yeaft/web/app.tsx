// The web client's screens: login, the agents and their conversations, a conversation with its
// composer, and the ask-user dialog.
import { render, type ComponentChildren } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { renderMarkdown } from "./markdown.js";
import { mentionsIn, Store, type Attachment, type Block, type Conversation, type Persona, type Question, type State } from "./store.js";

const PROVIDERS = ["switchyard", "claude-code", "codex", "copilot"];
const MAX_ATTACHMENT_BYTES = 8 * 1024 * 1024;

function useStore(store: Store): State {
  const [state, setState] = useState(store.snapshot);
  useEffect(() => {
    const unsubscribe = store.subscribe(() => setState(store.snapshot));
    // Effects run after the first paint: what changed before it subscribed.
    setState(store.snapshot);
    return unsubscribe;
  }, [store]);
  return state;
}

function App({ store }: { store: Store }) {
  const state = useStore(store);
  if (state.connection === "loggedOut" || state.connection === "refused") return <Login store={store} />;
  if (!state.username) return <div class="splash">Connecting…</div>;
  return <Shell store={store} state={state} />;
}

function Login({ store }: { store: Store }) {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(await store.login(username, password).catch(() => "The relay cannot be reached."));
    setBusy(false);
  };
  return (
    <form class="login" onSubmit={submit}>
      <h1>Yeaft</h1>
      <p class="muted">Chat with the agents on your machines.</p>
      <label>
        Username
        <input name="username" autocomplete="username" value={username} onInput={(e) => setUsername(e.currentTarget.value)} required />
      </label>
      <label>
        Password
        <input
          name="password"
          type="password"
          autocomplete="current-password"
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
          required
        />
      </label>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <button type="submit" disabled={busy}>
        Log in
      </button>
    </form>
  );
}

function Shell({ store, state }: { store: Store; state: State }) {
  const [menuOpen, setMenuOpen] = useState(false);
  const conversation = state.selected ? state.conversations[state.selected] : undefined;
  const agent = state.agents.find((a) => a.id === (conversation?.agentId ?? state.selectedAgent));
  return (
    <div class="shell">
      <aside
        class={menuOpen ? "sidebar open" : "sidebar"}
        onClick={(e) => (e.target as HTMLElement).closest("button") && setMenuOpen(false)}
      >
        <Sidebar store={store} state={state} />
      </aside>
      <main>
        <header class="topbar">
          <button class="menu" aria-label="Menu" onClick={() => setMenuOpen(!menuOpen)}>
            ☰
          </button>
          <span class="title">{conversation?.title ?? "Yeaft"}</span>
          {agent && (
            <span class={agent.online ? "badge online" : "badge offline"}>{agent.online ? agent.name : `${agent.name} (offline)`}</span>
          )}
        </header>
        {state.connection === "reconnecting" && <div class="banner">Connection lost: reconnecting…</div>}
        {state.notice && <div class="banner notice">{state.notice}</div>}
        {conversation ? (
          <ConversationView store={store} conversation={conversation} personas={agent?.personas ?? []} />
        ) : (
          <div class="empty">
            {state.agents.length ? "Start a conversation with one of your agents." : "No agent is connected to your account yet."}
          </div>
        )}
      </main>
      {state.questions[0] && <AskUser store={store} question={state.questions[0]} />}
    </div>
  );
}

function Sidebar({ store, state }: { store: Store; state: State }) {
  const [provider, setProvider] = useState(PROVIDERS[0]!);
  const agent = state.agents.find((a) => a.id === state.selectedAgent);
  const conversations = Object.values(state.conversations).filter((c) => c.agentId === state.selectedAgent);
  return (
    <>
      <div class="who">
        <strong>{state.username}</strong>
        <button class="link" onClick={() => void store.logout()}>
          Log out
        </button>
      </div>
      <h2>Agents</h2>
      <ul class="agents">
        {state.agents.map((a) => (
          <li key={a.id}>
            <button class={a.id === state.selectedAgent ? "agent selected" : "agent"} onClick={() => store.selectAgent(a.id)}>
              <span class={a.online ? "dot online" : "dot"} aria-label={a.online ? "online" : "offline"} />
              {a.name}
            </button>
          </li>
        ))}
      </ul>
      {agent && (
        <>
          <div class="new">
            <select aria-label="Provider" value={provider} onChange={(e) => setProvider(e.currentTarget.value)}>
              {PROVIDERS.map((p) => (
                <option key={p}>{p}</option>
              ))}
            </select>
            <button onClick={() => store.newConversation(agent.id, "chat", provider)}>New chat</button>
          </div>
          {agent.personas.length > 0 && (
            <button class="new-group" onClick={() => store.newConversation(agent.id, "group")}>
              New group chat ({agent.personas.map((p) => p.name).join(", ")})
            </button>
          )}
          <h2>Conversations</h2>
          <ul class="conversations">
            {conversations.map((c) => (
              <li key={c.id}>
                <button class={c.id === state.selected ? "conversation selected" : "conversation"} onClick={() => store.select(c.id)}>
                  {c.kind === "group" && <span class="tag">group</span>}
                  {c.title}
                  {c.running && <span class="spinner" aria-label="running" />}
                </button>
              </li>
            ))}
          </ul>
        </>
      )}
    </>
  );
}

function ConversationView({ store, conversation, personas }: { store: Store; conversation: Conversation; personas: Persona[] }) {
  const list = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = list.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [conversation.blocks]);
  return (
    <section class="conversation-view">
      <div class="messages" ref={list} aria-live="polite">
        <Blocks blocks={conversation.blocks} />
        {conversation.running && <div class="typing">working…</div>}
      </div>
      <Composer store={store} conversation={conversation} personas={personas} />
    </section>
  );
}

function Blocks({ blocks }: { blocks: Block[] }) {
  return (
    <>
      {blocks.map((block, i) => (
        <BlockView key={i} block={block} />
      ))}
    </>
  );
}

function BlockView({ block }: { block: Block }) {
  switch (block.kind) {
    case "user":
      return (
        <div class="msg user">
          {block.text}
          {block.attachments && (
            <div class="files">
              <Clip /> {block.attachments.join(", ")}
            </div>
          )}
        </div>
      );
    case "text":
      return <Markdown text={block.text} />;
    case "thinking":
      return (
        <details class="thinking">
          <summary>Thinking</summary>
          <pre>{block.text}</pre>
        </details>
      );
    case "tool":
      return (
        <details class={block.isError ? "tool failed" : "tool"}>
          <summary>
            <span class="tool-name">{block.name}</span>
            <span class="tool-status">{block.result === undefined ? "running" : block.isError ? "failed" : "done"}</span>
          </summary>
          <pre class="tool-input">{typeof block.input === "string" ? block.input : JSON.stringify(block.input, null, 2)}</pre>
          {block.result !== undefined && <pre class="tool-result">{block.result}</pre>}
        </details>
      );
    case "result":
      return (
        <div class={block.isError ? "result failed" : "result"}>
          {block.cancelled ? "Cancelled" : block.isError ? "Failed" : "Done"} in {(block.durationMs / 1000).toFixed(1)} s ·{" "}
          {block.inputTokens.toLocaleString()} in / {block.outputTokens.toLocaleString()} out tokens · ${block.costUsd.toFixed(4)}
        </div>
      );
    case "error":
      return (
        <div class="msg error" role="alert">
          {block.message}
        </div>
      );
    case "lanes":
      return (
        <div class="lanes">
          {Object.entries(block.lanes).map(([persona, blocks]) => (
            <div class="lane" key={persona} data-persona={persona}>
              <div class="persona">@{persona}</div>
              <Blocks blocks={blocks} />
            </div>
          ))}
        </div>
      );
  }
}

function Markdown({ text }: { text: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  return <div class="msg assistant markdown" dangerouslySetInnerHTML={{ __html: html }} />;
}

function Composer({ store, conversation, personas }: { store: Store; conversation: Conversation; personas: Persona[] }) {
  const [text, setText] = useState("");
  const [files, setFiles] = useState<Attachment[]>([]);
  const [problem, setProblem] = useState<string>();
  const [caret, setCaret] = useState(0);
  const input = useRef<HTMLTextAreaElement>(null);
  const group = conversation.kind === "group";
  // The @word being typed at the caret, in a group chat.
  const typing = group ? /@([\w.-]*)$/.exec(text.slice(0, caret)) : null;
  const suggestions = typing ? personas.filter((p) => p.name.toLowerCase().startsWith(typing[1]!.toLowerCase())) : [];
  const [active, setActive] = useState(0);

  const complete = (persona: Persona) => {
    const start = caret - typing![1]!.length;
    const next = `${text.slice(0, start)}${persona.name} ${text.slice(caret)}`;
    setText(next);
    const at = start + persona.name.length + 1;
    setCaret(at);
    requestAnimationFrame(() => input.current?.setSelectionRange(at, at));
    input.current?.focus();
  };
  const send = () => {
    store.send(conversation.id, text, files);
    setText("");
    setFiles([]);
    setCaret(0);
  };
  const onKeyDown = (event: KeyboardEvent) => {
    if (suggestions.length) {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        setActive((active + (event.key === "ArrowDown" ? 1 : suggestions.length - 1)) % suggestions.length);
        return;
      }
      if (event.key === "Enter" || event.key === "Tab") {
        event.preventDefault();
        complete(suggestions[Math.min(active, suggestions.length - 1)]!);
        return;
      }
    }
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      send();
    }
  };
  const attach = async (list: FileList | null) => {
    const picked: Attachment[] = [];
    for (const file of Array.from(list ?? [])) {
      if (file.size > MAX_ATTACHMENT_BYTES) {
        setProblem(`${file.name} is larger than 8 MB.`);
        continue;
      }
      picked.push({ name: file.name, mime: file.type || "application/octet-stream", base64: await base64Of(file) });
    }
    setFiles([...files, ...picked]);
  };

  return (
    <div class="composer">
      {suggestions.length > 0 && (
        <ul class="mentions" role="listbox" aria-label="Personas">
          {suggestions.map((p, i) => (
            <li
              key={p.name}
              role="option"
              aria-selected={i === active}
              class={i === active ? "active" : ""}
              onMouseDown={(e) => (e.preventDefault(), complete(p))}
            >
              <strong>@{p.name}</strong> {p.description && <span class="muted">{p.description}</span>}
            </li>
          ))}
        </ul>
      )}
      {(files.length > 0 || problem) && (
        <div class="attachments">
          {files.map((f) => (
            <span class="chip" key={f.name}>
              <Clip /> {f.name}
            </span>
          ))}
          {problem && <span class="error">{problem}</span>}
        </div>
      )}
      <div class="row">
        <label class="attach" aria-label="Attach files">
          <Clip />
          <input type="file" multiple onChange={(e) => void attach(e.currentTarget.files)} />
        </label>
        <textarea
          ref={input}
          rows={2}
          aria-label="Message"
          placeholder={group ? "Message the group (@ to mention a persona)" : "Message the agent"}
          value={text}
          onInput={(e) => {
            setText(e.currentTarget.value);
            setCaret(e.currentTarget.selectionStart);
            setActive(0);
          }}
          onKeyDown={onKeyDown}
          onClick={(e) => setCaret(e.currentTarget.selectionStart)}
        />
        {conversation.running ? (
          <button class="cancel" onClick={() => store.cancel(conversation.id)}>
            Cancel
          </button>
        ) : (
          <button class="send" onClick={send} disabled={!text.trim() && files.length === 0}>
            Send
          </button>
        )}
      </div>
      {group && text && mentionsIn(text, personas).length === 0 && <div class="hint muted">Everyone answers: no one is @mentioned.</div>}
    </div>
  );
}

function AskUser({ store, question }: { store: Store; question: Question }) {
  const [picked, setPicked] = useState<string[]>([]);
  const [other, setOther] = useState("");
  return (
    <div class="overlay">
      <div class="dialog" role="dialog" aria-modal="true" aria-label="The agent asks">
        <h2>The agent asks</h2>
        <p>{question.prompt}</p>
        <div class="choices">
          {question.choices.map((choice) =>
            question.multiSelect ? (
              <label key={choice}>
                <input
                  type="checkbox"
                  checked={picked.includes(choice)}
                  onChange={() => setPicked(picked.includes(choice) ? picked.filter((c) => c !== choice) : [...picked, choice])}
                />
                {choice}
              </label>
            ) : (
              <button key={choice} onClick={() => store.answer(question, choice)}>
                {choice}
              </button>
            ),
          )}
        </div>
        {(question.multiSelect || question.choices.length === 0) && (
          <Row>
            <input aria-label="Answer" value={other} onInput={(e) => setOther(e.currentTarget.value)} placeholder="Your answer" />
            <button onClick={() => store.answer(question, [...picked, ...(other ? [other] : [])].join(", "))}>Answer</button>
          </Row>
        )}
      </div>
    </div>
  );
}

/** A paperclip (drawn, so that no emoji font is needed). */
function Clip() {
  return (
    <svg class="icon" viewBox="0 0 24 24" width="16" height="16" aria-hidden="true">
      <path
        d="M16.5 6.5 8.9 14.1a2 2 0 0 0 2.8 2.8l7.4-7.4a4 4 0 0 0-5.7-5.7l-7.6 7.6a6 6 0 0 0 8.5 8.5l6.2-6.2"
        fill="none"
        stroke="currentColor"
        stroke-width="2"
        stroke-linecap="round"
      />
    </svg>
  );
}

function Row({ children }: { children: ComponentChildren }) {
  return <div class="row">{children}</div>;
}

function base64Of(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ""));
    reader.onerror = () => reject(reader.error ?? new Error("cannot read the file"));
    reader.readAsDataURL(file);
  });
}

const store = new Store();
render(<App store={store} />, document.getElementById("app")!);
store.start();
