// Worker thread entry of search_files: runs one search and posts its result back.
import { parentPort, workerData } from "node:worker_threads";
import { runSearch, type SearchJob } from "./search-core.js";

void runSearch(workerData as SearchJob).then(
  (result) => parentPort?.postMessage({ result }),
  (error: unknown) => parentPort?.postMessage({ error: error instanceof Error ? error.message : String(error) }),
);
