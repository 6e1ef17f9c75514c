// Changes of a workspace's configuration (skills, commands, MCP servers, settings): each
// successful write is announced, so every connected client can re-read what it shows.

export interface ConfigChange {
  workspacePath: string;
  /** The request that made the change, e.g. "skills/setEnabled". */
  source: string;
  /** Coarse areas that changed, e.g. ["skills"]. */
  regions: string[];
  changedAt: string;
}

export class ConfigChanges {
  private readonly listeners = new Set<(change: ConfigChange) => void>();

  on(listener: (change: ConfigChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  announce(workspacePath: string, source: string, regions: string[]): void {
    const change = { workspacePath, source, regions, changedAt: new Date().toISOString() };
    for (const listener of this.listeners) listener(change);
  }
}

/** Names of skills, commands and servers: also directory and file names, so nothing that climbs. */
export const RESOURCE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Names that are keys of a configuration list (MCP servers, channels) compare without case. */
export const sameName = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase();
