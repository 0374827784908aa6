import { randomUUID } from 'node:crypto';
import { createConnection, type Socket } from 'node:net';
import type { Redis } from 'ioredis';
import { waitFor } from '../conformance/adapter-harness';

/** One command as `MONITOR` reported it. */
export interface MonitoredCommand {
  args: string[];
  /** `ip:port` of the client that sent it, or `lua` for commands run inside a script. */
  source: string;
}

/**
 * A minimal `MONITOR` client on a raw socket.
 *
 * NOTE: ioredis's `redis.monitor()` is racy under load: when `+OK` and the first monitor lines
 * arrive in one chunk, it parses them before switching to monitoring mode and emits
 * "Command queue state error". Reading the protocol ourselves avoids that.
 */
export class RedisMonitor {
  /** Every command seen since start, in execution order. */
  readonly commands: MonitoredCommand[] = [];
  private buffer = '';

  private constructor(private readonly socket: Socket) {}

  /** Connect to `url` (redis://[user:pass@]host:port) and enter MONITOR mode. */
  static start(url: string): Promise<RedisMonitor> {
    const parsed = new URL(url);
    if (parsed.protocol !== 'redis:')
      throw new Error(`RedisMonitor supports redis:// URLs only, got ${parsed.protocol}`);
    const socket = createConnection({ host: parsed.hostname || '127.0.0.1', port: Number(parsed.port || 6379) });
    socket.setEncoding('utf8');
    const monitor = new RedisMonitor(socket);
    const handshake: string[] = [];
    if (parsed.password) {
      const user = parsed.username ? [decodeURIComponent(parsed.username)] : [];
      handshake.push(encode(['AUTH', ...user, decodeURIComponent(parsed.password)]));
    }
    handshake.push(encode(['MONITOR']));
    let pendingOks = handshake.length;
    return new Promise((resolve, reject) => {
      socket.once('error', reject);
      socket.on('data', (chunk: string) => {
        monitor.buffer += chunk;
        let end: number;
        while ((end = monitor.buffer.indexOf('\r\n')) !== -1) {
          const line = monitor.buffer.slice(0, end);
          monitor.buffer = monitor.buffer.slice(end + 2);
          if (pendingOks > 0) {
            if (line !== '+OK') return reject(new Error(`MONITOR handshake failed: ${line}`));
            if (--pendingOks === 0) resolve(monitor);
            continue;
          }
          const command = parseLine(line);
          if (command) monitor.commands.push(command);
        }
      });
      socket.write(handshake.join(''));
    });
  }

  /**
   * The commands `client` sent while `action` ran, in order, as Redis saw them (between two ECHO
   * markers the client sends itself; commands from other clients and inside scripts are left out).
   */
  async commandsOf(client: Redis, action: () => Promise<unknown>): Promise<string[][]> {
    const id = randomUUID();
    await client.echo(`start-${id}`);
    await action();
    await client.echo(`end-${id}`);
    const seen = this.commands;
    const isMark = (e: MonitoredCommand, mark: string) => e.args[0]?.toLowerCase() === 'echo' && e.args[1] === mark;
    await waitFor(() => seen.some((e) => isMark(e, `end-${id}`)), 'the end marker in MONITOR');
    const start = seen.findIndex((e) => isMark(e, `start-${id}`));
    const end = seen.findIndex((e) => isMark(e, `end-${id}`));
    const source = seen[start].source;
    return seen
      .slice(start + 1, end)
      .filter((e) => e.source === source)
      .map((e) => e.args);
  }

  /**
   * Every command `client` sent while `action` ran ({@link commandsOf}), and every command its
   * scripts ran on keys under `prefix` (`<prefix>:…`).
   */
  async withScriptCommands(
    client: Redis,
    prefix: string,
    action: () => Promise<unknown>,
  ): Promise<{ sent: string[][]; inside: string[][] }> {
    const from = this.commands.length;
    const sent = await this.commandsOf(client, action);
    const inside = this.commands
      .slice(from)
      .filter((c) => c.source === 'lua' && c.args.slice(1).some((a) => a.startsWith(`${prefix}:`)))
      .map((c) => c.args);
    return { sent, inside };
  }

  close(): void {
    this.socket.destroy();
  }
}

function encode(args: string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
}

/** Parse `+1700000000.123456 [0 127.0.0.1:5555] "set" "k" "v"` (arguments in sdscatrepr quoting). */
function parseLine(line: string): MonitoredCommand | undefined {
  const match = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] (.*)$/s.exec(line);
  if (!match) return undefined;
  const args: string[] = [];
  const text = match[2];
  let i = 0;
  while (i < text.length) {
    if (text[i] !== '"') {
      i++;
      continue;
    }
    let value = '';
    i++;
    while (i < text.length && text[i] !== '"') {
      if (text[i] === '\\') {
        const next = text[i + 1];
        if (next === 'x') {
          value += String.fromCharCode(parseInt(text.slice(i + 2, i + 4), 16));
          i += 4;
          continue;
        }
        value += ({ n: '\n', r: '\r', t: '\t', a: '\x07', b: '\b' } as Record<string, string>)[next] ?? next;
        i += 2;
        continue;
      }
      value += text[i++];
    }
    args.push(value);
    i++;
  }
  return { args, source: match[1] };
}
