// podman settings that work on a build machine without a Docker engine (Debian's podman 4.3): the runc
// runtime (crun rejects the cgroup layout), modest ulimits, and podman's state in a folder of our
// own through CONTAINERS_CONF / CONTAINERS_STORAGE_CONF, so nothing touches the machine's store.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Podman {
  env: Record<string, string>;
  /** Runs podman; returns status and combined output. */
  run: (args: string[], opts?: { timeoutMs?: number }) => { status: number | null; out: string };
}

export function hasPodman(): boolean {
  return spawnSync('podman', ['--version'], { encoding: 'utf8' }).status === 0;
}

/** Writes containers.conf and storage.conf into `dir` (created) and returns a podman runner using them. */
export function podmanIn(dir: string): Podman {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'containers.conf'), '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]\n[engine]\nruntime = "runc"\n');
  // vfs: no overlay mounts are left behind when a run is interrupted.
  writeFileSync(join(dir, 'storage.conf'), `[storage]\ndriver = "vfs"\nrunroot = "${dir}/run"\ngraphroot = "${dir}/storage"\n`);
  const env = { CONTAINERS_CONF: join(dir, 'containers.conf'), CONTAINERS_STORAGE_CONF: join(dir, 'storage.conf') };
  return {
    env,
    run: (args, opts = {}) => {
      const r = spawnSync('podman', args, {
        env: { ...process.env, ...env },
        encoding: 'utf8',
        timeout: opts.timeoutMs ?? 300_000,
        maxBuffer: 64 * 1024 * 1024,
      });
      return { status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
    },
  };
}
