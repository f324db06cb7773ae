// What a client and an event stream both need to reach a server.

export interface ClientOptions {
  /** Where the server listens, e.g. `http://127.0.0.1:7420`. */
  baseUrl: string;
  /** An API key (`agentloop keys create`); loopback servers need none. */
  apiKey?: string;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** The fetch to use; the global one by default. */
  fetch?: (input: Request) => Promise<Response>;
}

/** The headers every request carries: options.headers and the key. */
export function headersOf(options: ClientOptions): Record<string, string> {
  const h = { ...options.headers };
  if (options.apiKey) {
    h.Authorization = `Bearer ${options.apiKey}`;
  }
  return h;
}

/** The base URL without a trailing slash, so paths join with one. */
export function baseOf(options: ClientOptions): string {
  return options.baseUrl.replace(/\/+$/, "");
}
