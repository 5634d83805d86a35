// Release artifacts in dist/release/: the single-file executables for linux-x64 and linux-arm64
// (every program scripts/build.ts knows whose entry exists: probe, collector, orchestrator,
// scenario, and agent, the multi-call executable holding both the probe and the collector that the
// image ships), the image archives (podman, when it is installed) and SHA256SUMS in sha256sum's format:
//   cd dist/release && sha256sum -c SHA256SUMS
// Usage: node scripts/release.ts [--no-image] [--compression=gzip|zstd]
//   (the image archives' compression: .tar.gz, or .tar.zst about a quarter smaller; see scripts/image.ts)
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, createReadStream, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { VERSION as version } from '../shared/version.ts';
import { buildImage, mb, type ImageArch } from './image.ts';
import { hasPodman } from './lib/podman.ts';
import { PROGRAMS } from './lib/programs.ts';

const root = resolve(import.meta.dirname, '..');
const out = join(root, 'dist', 'release');

function sha256(file: string): Promise<string> {
  return new Promise((res, rej) => {
    const h = createHash('sha256');
    createReadStream(file)
      .on('data', (d) => h.update(d))
      .on('end', () => res(h.digest('hex')))
      .on('error', rej);
  });
}

async function main(): Promise<void> {
  const withImage = !process.argv.includes('--no-image');
  const compression = process.argv.find((a) => a.startsWith('--compression='))?.slice('--compression='.length) ?? 'gzip';
  if (compression !== 'gzip' && compression !== 'zstd') {
    console.error(`release: error: invalid value for --compression: ${JSON.stringify(compression)} (expected gzip or zstd)`);
    process.exit(2);
  }
  const programs = Object.keys(PROGRAMS).filter((p) => existsSync(join(root, PROGRAMS[p]!)));
  console.log(`building ${programs.join(', ')} for linux-x64 and linux-arm64`);
  execFileSync(process.execPath, [join(root, 'scripts', 'build.ts'), ...programs, '--arch=all'], { stdio: 'inherit', cwd: root });

  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  for (const p of programs) {
    for (const [arch, src] of [
      ['x64', p],
      ['arm64', `${p}-linux-arm64`],
    ] as const) {
      const from = join(root, 'dist', 'bin', src);
      if (!existsSync(from)) throw new Error(`missing ${from} after the build`);
      const to = join(out, `starmap-${p}-${version}-linux-${arch}`);
      copyFileSync(from, to);
      chmodSync(to, 0o755);
    }
  }
  if (withImage) {
    if (!hasPodman()) console.warn('podman is not installed: no image archives (build the image with the Dockerfile instead)');
    else {
      for (const arch of ['amd64', 'arm64'] as ImageArch[]) {
        try {
          const r = await buildImage({ arch, store: join(root, 'dist', '.podman'), save: true, compression });
          copyFileSync(r.archive!, join(out, basename(r.archive!)));
        } catch (err) {
          console.warn(`no ${arch} image archive: ${(err as Error).message.split('\n')[0]}`);
        }
      }
    }
  }
  const files = readdirSync(out)
    .filter((f) => f !== 'SHA256SUMS')
    .sort();
  const lines: string[] = [];
  for (const f of files) lines.push(`${await sha256(join(out, f))}  ${f}`);
  writeFileSync(join(out, 'SHA256SUMS'), lines.join('\n') + '\n');
  console.log(`\ndist/release (verify: cd dist/release && sha256sum -c SHA256SUMS)`);
  for (const f of files) console.log(`  ${f.padEnd(48)} ${mb(statSync(join(out, f)).size).padStart(9)}`);
}

await main();
