import { strict as assert } from "node:assert";
import { test } from "node:test";
import { parse } from "yaml";
import { parseFrontMatter, plainStringMapping } from "../../src/workspace/front-matter.js";

// Front matter the fast path reads: it must give exactly what the YAML parser gives.
const PLAIN = [
  "name: write-skill\ndescription: Create or improve a skill (a SKILL.md folder) for this workspace or for the user.",
  "name: a\r\n\r\nurl: https://example.com/x?y=1",
  "title: It's fine, really; 100% (almost)\nbins: git",
  "key_2-x: value with trailing spaces   \n",
  "description: ends with a hash# sign and a colon:inside",
];

// Front matter it must leave to the parser: other types, nesting, quoting, comments, repeats.
const NOT_PLAIN = [
  "enabled: true",
  "count: 3",
  "ratio: .5",
  "neg: -1",
  "nothing: ~",
  "nothing: null",
  "quoted: 'a'",
  'quoted: "a"',
  "list: [a, b]",
  "map: {a: 1}",
  "bins:\n  - git",
  "text: |\n  block",
  "text: >\n  folded",
  "a: b: c",
  "a: b:",
  "a: b # comment",
  "# comment\na: b",
  "a: b\na: c",
  "anchor: &x b",
  "alias: *x",
  "tag: !str b",
  "null: b",
  "a:b",
  "  a: b",
  "",
];

test("the fast path reads simple front matter exactly as the YAML parser does", () => {
  for (const text of PLAIN) {
    const fast = plainStringMapping(text);
    assert.ok(fast, `taken for ${JSON.stringify(text)}`);
    assert.deepEqual(fast, parse(text), `same result for ${JSON.stringify(text)}`);
  }
});

test("anything else goes to the YAML parser", () => {
  for (const text of NOT_PLAIN) assert.equal(plainStringMapping(text), undefined, `not taken for ${JSON.stringify(text)}`);
});

test("parseFrontMatter gives the same metadata either way", () => {
  const file = (yaml: string): string => `---\n${yaml}\n---\n\nBody.\n`;
  assert.deepEqual(parseFrontMatter(file("name: x\ndescription: Does y.")), {
    metadata: { name: "x", description: "Does y." },
    body: "Body.\n",
  });
  assert.deepEqual(parseFrontMatter(file("name: x\nbins: [git, rg]")).metadata, { name: "x", bins: ["git", "rg"] });
  assert.equal(parseFrontMatter(file("a: b\na: c")).metadata, null, "a repeated key is the parser's error");
});
