// A DNS server on loopback for tests, so that no test ever asks the machine's resolver (which is
// off the machine) about a name: A and AAAA answers for the names it is given, NXDOMAIN for others,
// silence for the names `silent` picks (a lookup that never answers), and a malformed answer (the
// query's header and nothing else parseable) for the names `malformed` picks.
import dgram from 'node:dgram';
import net from 'node:net';
import dnsPacket from 'dns-packet';
import { NameResolver } from '../../shared/resolver.ts';

export interface TestDns {
  /** `127.0.0.1:<port>`, for --dns-servers. */
  server: string;
  /** Every name asked, with its type (`web.test A`), in order. */
  queries: string[];
  close: () => void;
}

export interface DnsServerOptions {
  silent?: (name: string) => boolean;
  malformed?: (name: string) => boolean;
  /** Answers to other names wait this long, so that they are still in flight beside a hostile one. */
  delayMs?: number;
}

export async function dnsServer(records: Record<string, string[]>, opts: DnsServerOptions = {}): Promise<TestDns> {
  const socket = dgram.createSocket('udp4');
  const queries: string[] = [];
  let closed = false;
  socket.on('message', (msg, from) => {
    let query: dnsPacket.DecodedPacket;
    try {
      query = dnsPacket.decode(msg);
    } catch {
      return;
    }
    const question = query.questions?.[0];
    if (!question) return;
    const name = question.name.toLowerCase();
    queries.push(`${name} ${question.type}`);
    if (opts.silent?.(name)) return;
    // The query's own id and a response's flags, then two stray bytes where the question should be.
    if (opts.malformed?.(name))
      return socket.send(Buffer.concat([msg.subarray(0, 2), Buffer.from([0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0, 0xc0, 0xff])]), from.port, from.address);
    const known = Object.hasOwn(records, name);
    const family = question.type === 'AAAA' ? 6 : 4;
    const answers = (known ? records[name]! : [])
      .filter((address) => net.isIP(address) === family)
      .map((address) => ({ type: question.type as 'A' | 'AAAA', name: question.name, ttl: 5, data: address }));
    const reply = dnsPacket.encode({
      type: 'response',
      id: query.id,
      flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | (known ? 0 : 3), // rcode 3: NXDOMAIN
      questions: [question],
      answers,
    });
    if (opts.delayMs) setTimeout(() => closed || socket.send(reply, from.port, from.address), opts.delayMs);
    else socket.send(reply, from.port, from.address);
  });
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
  return {
    server: `127.0.0.1:${socket.address().port}`,
    queries,
    close: () => {
      closed = true;
      socket.close();
    },
  };
}

/** A resolver that asks only `dns` and reads no resolv.conf (so no search domain of this machine). */
export function testResolver(dns: TestDns, timeoutMs = 1000): NameResolver {
  return new NameResolver({ timeoutMs, servers: [dns.server], resolvConfPath: '/nonexistent/resolv.conf', env: {} });
}
