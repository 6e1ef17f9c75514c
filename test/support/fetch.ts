// fetch for tests: node:test prints a failed fetch as "fetch failed" alone; this one names the
// request and why it failed (refused, reset, closed), which is what a flaky run needs to tell.
export async function fetchOrSayWhy(url: string | URL, init: RequestInit = {}): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? (error.cause as NodeJS.ErrnoException) : undefined;
    const why = cause ? ` (${cause.code ? `${cause.code}: ` : ""}${cause.message})` : "";
    throw new Error(`${init.method ?? "GET"} ${String(url)}: ${error instanceof Error ? error.message : String(error)}${why}`, {
      cause: error,
    });
  }
}
