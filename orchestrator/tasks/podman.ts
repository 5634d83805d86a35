// Docker apps run with podman (no Docker engine on this machine). `podman run --rm` in the
// foreground is the task's process: signals to its process group reach podman, which forwards
// them to the container (--sig-proxy is on by default); after the task ends the container is
// removed with `podman rm -f` in case podman itself was SIGKILLed.
import { spawn } from 'node:child_process';
import type { LaunchSpec } from './types.ts';
import { resolveProgram } from './env.ts';

/** Container names: the task id with characters podman rejects replaced. */
export function containerName(taskId: string): string {
  return taskId.replace(/[^a-zA-Z0-9_.-]/g, '_').replace(/^[^a-zA-Z0-9]+/, '');
}

/** The podman program on PATH (a default PATH when none), or undefined. */
export function findPodman(pathVar: string | undefined): string | undefined {
  return resolveProgram('podman', pathVar);
}

/** Arguments of `podman run` for a docker task (without the podman program itself). */
export function podmanRunArgs(spec: LaunchSpec, opts: { publishAddress?: string | undefined } = {}): string[] {
  const d = spec.docker!;
  const args = ['run', '--rm', '--name', containerName(spec.taskId), '--label', `MESOS_TASK_ID=${spec.taskId}`];
  if (d.forcePullImage) args.push('--pull', 'always');
  if (d.privileged) args.push('--privileged');
  switch (d.network) {
    case 'HOST':
      args.push('--network', 'host');
      break;
    case 'NONE':
      args.push('--network', 'none');
      break;
    default:
      for (const p of spec.ports) {
        if (p.containerPort === undefined) continue;
        const proto = p.protocol.split(',').map((s) => s.trim().toLowerCase());
        const addr = opts.publishAddress ? `${opts.publishAddress.includes(':') ? `[${opts.publishAddress}]` : opts.publishAddress}:` : '';
        // A mapping without a host port is not published (Marathon: only mappings with a hostPort get one).
        if (!p.hostPort) continue;
        for (const pr of proto) args.push('-p', `${addr}${p.hostPort}:${p.containerPort}${pr && pr !== 'tcp' ? `/${pr}` : ''}`);
      }
  }
  for (const v of d.volumes) args.push('-v', `${v.hostPath}:${v.containerPath}:${v.mode === 'RO' ? 'ro' : 'rw'}`);
  for (const { key, value } of d.parameters) args.push(`--${key}=${value}`);
  for (const [k, v] of Object.entries(spec.env)) args.push('-e', `${k}=${v}`);
  args.push(d.image);
  if (spec.cmd) args.push('/bin/sh', '-c', spec.cmd);
  else if (spec.args) args.push(...spec.args);
  return args;
}

/** `podman rm -f <name>`, best effort, bounded to 15 s. */
export function removeContainer(podman: string | undefined, extraArgs: string[], name: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (!podman) return Promise.resolve();
  return new Promise((resolve) => {
    const child = spawn(podman, [...extraArgs, 'rm', '-f', '--ignore', '-t', '0', name], { stdio: 'ignore', env });
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('error', () => {
      clearTimeout(timer);
      resolve();
    });
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
