// The listener's live feed (/events) read with fetch rather than EventSource, which cannot send
// an Authorization header ([admin] auth = "all" asks for the token on every read). Server-sent
// events as the spec frames them: "event:" and "data:" lines, a blank line ends one, ":" lines
// are comments. The stream reconnects after an end or an error, as EventSource would.

/** What the stream tells its owner. */
export interface StreamHandlers {
  readonly headers: () => Record<string, string>;
  readonly event: (name: string, data: string) => void;
  readonly open: () => void;
  readonly lost: () => void;
  /** The listener refused for the token (401/403): the stream waits for `retry()`. */
  readonly refused: (status: number, message: string) => void;
}

const RECONNECT_MS = 2_000;

/** An event stream that keeps itself connected. */
export class EventStream {
  #abort: AbortController | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly url: string,
    private readonly on: StreamHandlers,
  ) {}

  /** Connects (again) now, dropping the current connection. */
  retry(): void {
    clearTimeout(this.#timer);
    this.#abort?.abort();
    const abort = (this.#abort = new AbortController());
    void this.#run(abort.signal).then((again) => {
      if (!again || abort.signal.aborted) return;
      this.on.lost();
      this.#timer = setTimeout(() => this.retry(), RECONNECT_MS);
    });
  }

  /** Reads one connection to its end; resolves to whether to reconnect. */
  async #run(signal: AbortSignal): Promise<boolean> {
    try {
      const res = await fetch(this.url, { headers: { accept: "text/event-stream", ...this.on.headers() }, signal, cache: "no-store" });
      if (res.status === 401 || res.status === 403) {
        const body = (await res.json().catch(() => ({}))) as { message?: string };
        this.on.refused(res.status, body.message ?? res.statusText);
        return false;
      }
      if (!res.ok || res.body === null) return true;
      this.on.open();
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffered = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return true;
        buffered += value.replace(/\r\n?/g, "\n");
        let end: number;
        while ((end = buffered.indexOf("\n\n")) >= 0) {
          this.#dispatch(buffered.slice(0, end));
          buffered = buffered.slice(end + 2);
        }
      }
    } catch {
      return true;
    }
  }

  #dispatch(block: string): void {
    let name = "message";
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") name = value;
      else if (field === "data") data.push(value);
    }
    if (data.length > 0) this.on.event(name, data.join("\n"));
  }
}
