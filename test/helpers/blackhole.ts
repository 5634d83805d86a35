// A TCP port on loopback whose connects are never answered: a listener that never accepts, with
// its accept queue filled, so the kernel drops further SYNs (the client sees no answer at all,
// just like a policy that drops packets). Node always accepts, so a tiny python3 helper holds it.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const SCRIPT = `
import socket, sys, time
host = sys.argv[1]
fam = socket.AF_INET6 if ':' in host else socket.AF_INET
s = socket.socket(fam); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((host, 0)); s.listen(0)
port = s.getsockname()[1]
fill = []
for i in range(4):
    c = socket.socket(fam); c.setblocking(False)
    try: c.connect((host, port))
    except BlockingIOError: pass
    fill.append(c)
print(port, flush=True)
sys.stdin.read()
`;

export interface Blackhole {
  host: string;
  port: number;
  close: () => void;
}

/** Starts a never-answering listener; `close()` ends it (it also ends when the test process dies). */
export async function blackhole(host = '127.0.0.1'): Promise<Blackhole> {
  const child = spawn('python3', ['-c', SCRIPT, host], { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout });
    rl.once('line', resolve);
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`blackhole helper exited with ${code}`)));
  });
  // Give the kernel a moment is not needed: the filler connects completed before the port was printed.
  return { host, port: Number(line), close: () => child.kill() };
}
