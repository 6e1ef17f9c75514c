// ask_user: lets the model put a question to the person (with choices, or free), and go on with
// the answer. Clients that can show a question answer it (Yeaft's ask-user dialog); with none,
// the model is told to decide by itself.
import { z } from "zod";
import { defineTool } from "./tool.js";

export const askUserTool = defineTool({
  name: "ask_user",
  description:
    "Ask the user a question when you cannot reasonably decide yourself; offer choices when there are a few clear options. Returns the user's answer.",
  kind: "readOnly",
  input: z.object({
    question: z.string().min(1).describe("The question, on its own."),
    choices: z.array(z.string().min(1)).optional().describe("Answers to choose from; leave out for a free answer."),
    multiSelect: z.boolean().optional().describe("Whether several choices may be picked."),
  }),
  async execute(input, ctx) {
    const answer = await ctx.ask?.({ prompt: input.question, choices: input.choices ?? [], multiSelect: input.multiSelect ?? false });
    if (answer === undefined) return { output: "No one can answer questions here right now: decide yourself and say what you chose." };
    return { output: answer };
  },
});
