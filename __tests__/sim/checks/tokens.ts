import type { ExecutedCommand } from '../redis/server';

/**
 * Fencing tokens only grow: each grant of a fenced lock (its acquire script answering [1, token])
 * hands out a token larger than every one before it on that lock, except that a copy of the same
 * request (the same mark field, ARGV[3]) must answer the same token again while the first grant's
 * hold can still be there. A copy that runs after that hold's lease (ARGV[1]) ended, or after the
 * server restarted without its data, may find nothing of it (its mark went with the hold): it is a
 * new grant then, and its token must grow.
 */
export class TokenOrder {
  private highest = -Infinity;
  private readonly byRequest = new Map<string, { token: number; endsBy: number; dataLosses: number }>();
  issued = 0;

  constructor(
    private readonly name: string,
    private readonly tokenKey: string,
    private readonly fail: (message: string) => void,
    /** How many times a server lost its data so far. */
    private readonly dataLosses: () => number = () => 0,
  ) {}

  afterCommand(command: ExecutedCommand): void {
    const { script, reply } = command;
    if (!script || script.keys[0] !== this.name || script.keys[2] !== this.tokenKey) return;
    if (!Array.isArray(reply) || reply[0] !== 1 || typeof reply[1] !== 'number') return;
    const token = reply[1];
    const request = script.args[2] as string;
    const earlier = this.byRequest.get(request);
    if (earlier !== undefined) {
      if (earlier.token === token) return;
      const firstMayBeGone = earlier.dataLosses !== this.dataLosses() || command.at >= earlier.endsBy;
      if (!firstMayBeGone) {
        this.fail(`${this.name}: a copy of request ${request} got token ${token}, not ${earlier.token}`);
        return;
      }
    }
    this.issued += 1;
    if (token <= this.highest) {
      this.fail(`${this.name}: token ${token} handed out after ${this.highest}: fencing tokens must grow`);
    }
    this.highest = Math.max(this.highest, token);
    const leaseMs = Number(script.args[0]);
    this.byRequest.set(request, { token, endsBy: command.at + leaseMs, dataLosses: this.dataLosses() });
  }
}
