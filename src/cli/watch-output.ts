import { describeState } from './inspect';
import type { NameState } from './state';

/**
 * What `rlock watch` prints: in text mode a screen per look (redrawn on a terminal), in JSON mode
 * one line per change of the name, and one line when Redis stops answering and when it is back.
 */
export class WatchOutput {
  /** The last state shown, without what changes on its own (the ttl), to tell a change. */
  private lastSeen = '';
  /** The state last shown, kept on screen during an outage. */
  private shown?: NameState;
  /** The last outage once over: the text view keeps saying when Redis was away. */
  private lastOutage = '';

  constructor(
    private readonly json: boolean,
    private readonly intervalMs: number,
    private readonly write: (text: string) => void,
  ) {}

  /** Whether a look has been shown: until then a failed look ends the watch. */
  get started(): boolean {
    return this.shown !== undefined;
  }

  look(state: NameState): void {
    const seen = JSON.stringify({ ...state, queue: state.queue.map((w) => w.ownerId), ttlMs: undefined });
    if (this.json) {
      if (seen !== this.lastSeen) this.line({ ...state });
    } else {
      const footer = this.lastOutage ? `${clock(new Date())}; ${this.lastOutage}` : clock(new Date());
      this.write(`${screen()}${describeState(state)}\n\n(${footer}; Ctrl-C ends)\n`);
    }
    this.lastSeen = seen;
    this.shown = state;
  }

  unreachable(since: Date, reason: string): void {
    if (this.json) {
      this.line({ event: 'unreachable', error: reason, retryInMs: this.intervalMs });
      return;
    }
    const retry = `looking again every ${this.intervalMs / 1000} s`;
    this.write(
      `${screen()}${this.shown ? describeState(this.shown) : ''}\n\n` +
        `(Redis is not answering since ${clock(since)} (${reason}); ${retry}. ` +
        `The view above is from before then. Ctrl-C ends)\n`,
    );
  }

  /** Redis answers again; the next look is shown whether or not the name changed. */
  back(since: Date, reason: string): void {
    this.lastOutage = `Redis was away ${clock(since)}–${clock(new Date())} (${reason})`;
    if (this.json) this.line({ event: 'reconnected', outageMs: Date.now() - since.getTime() });
    this.lastSeen = '';
  }

  private line(fields: object): void {
    this.write(`${JSON.stringify({ at: new Date().toISOString(), ...fields })}\n`);
  }
}

function clock(at: Date): string {
  return at.toLocaleTimeString();
}

function screen(): string {
  return process.stdout.isTTY ? '\x1b[2J\x1b[H' : '';
}
