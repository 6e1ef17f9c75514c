// schedule_prompt: the agent schedules a prompt to run later on its own thread (a reminder, a
// periodic check), as a cron job the user can list, pause and remove (cron/*).
import { z } from "zod";
import type { CronJob, CronSchedule } from "./cron.js";
import { defineTool, type AnyTool } from "../tools/tool.js";

export interface Scheduler {
  create(params: { name: string; threadId: string; prompt: string; schedule: CronSchedule }): Promise<CronJob>;
}

export function schedulePromptTool(scheduler: () => Scheduler): AnyTool {
  return defineTool({
    name: "schedule_prompt",
    description:
      "Schedule a prompt to run later on this thread, once or repeatedly, even when no one is connected. Give exactly one of every_minutes, at, daily_at or cron.",
    kind: "write",
    input: z
      .object({
        name: z.string().min(1).describe("A short name the user will see."),
        prompt: z.string().min(1).describe("What to do when it runs, written as a request to yourself."),
        every_minutes: z.number().positive().optional().describe("Run every N minutes."),
        at: z.string().optional().describe("Run once at this ISO 8601 time."),
        daily_at: z
          .string()
          .regex(/^\d{1,2}:\d{2}$/)
          .optional()
          .describe("Run every day at HH:MM."),
        cron: z.string().optional().describe("A cron expression (minute hour day month weekday)."),
        timezone: z.string().optional().describe("IANA time zone of daily_at and cron; default UTC."),
      })
      .refine((i) => [i.every_minutes, i.at, i.daily_at, i.cron].filter((v) => v !== undefined).length === 1, {
        message: "give exactly one of every_minutes, at, daily_at or cron",
      }),
    async execute(input, ctx) {
      if (!ctx.threadId) return { output: "Scheduling needs a thread.", isError: true };
      const tz = input.timezone ?? null;
      let schedule: CronSchedule;
      if (input.every_minutes !== undefined) schedule = { kind: "every", everyMs: Math.round(input.every_minutes * 60_000) };
      else if (input.at !== undefined) {
        const atMs = Date.parse(input.at);
        if (Number.isNaN(atMs)) return { output: `"${input.at}" is not an ISO 8601 time.`, isError: true };
        schedule = { kind: "at", atMs };
      } else if (input.daily_at !== undefined) {
        const [hour, minute] = input.daily_at.split(":").map(Number);
        schedule = { kind: "daily", dailyHour: hour!, dailyMinute: minute!, tz };
      } else schedule = { kind: "cron", expr: input.cron!, tz };
      const job = await scheduler().create({ name: input.name, threadId: ctx.threadId, prompt: input.prompt, schedule });
      const next = job.state.nextRunAtMs === null ? "never" : new Date(job.state.nextRunAtMs).toISOString();
      return { output: `Scheduled job ${job.id} ("${job.name}"); next run ${next}.` };
    },
  });
}
