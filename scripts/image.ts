// Builds the starmap image here, without a Docker engine or a registry: podman builds FROM scratch
// out of the multi-call agent executable (dist/bin/agent, built or brought up to date first) with
// `probe` and `collector` as symbolic links to it, the shared libraries `ldd` lists, a tiny
// HEALTHCHECK program and a passwd entry for the non-root user. One executable, so the image
// carries one Node runtime (two separate executables carried two, about twice the size). Then
// `podman save` writes dist/image/starmap-<version>-<arch>.tar.gz. The Dockerfile at the root
// does the same anywhere Docker runs (multi-stage, from node:24-bookworm).
// Usage: node scripts/image.ts [--arch=amd64|arm64|all] [--store=DIR] [--no-save] [--compression=gzip|zstd]
//   --compression=zstd writes starmap-<version>-<arch>.tar.zst instead (zstd level 19: about a quarter
//   smaller than gzip, about a minute per image): `docker load -i` reads it from Docker 23 on;
//   `zstd -dc … | podman load` otherwise.
//   The podman store defaults to dist/.podman; use the same CONTAINERS_CONF / CONTAINERS_STORAGE_CONF
//   (printed at the end) to run the image with podman. podman 4 does not read a gzipped archive
//   itself: `gunzip -c dist/image/starmap-<version>-amd64.tar.gz | podman load` (docker load -i reads it as is).
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, createReadStream, createWriteStream, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { constants as zlibConstants, createGzip, createZstdCompress } from 'node:zlib';
import { VERSION as version } from '../shared/version.ts';
import { podmanIn, hasPodman } from './lib/podman.ts';

const root = resolve(import.meta.dirname, '..');
/** The one executable in the image, and the names it answers to (links to it, busybox-style). */
const AGENT = 'agent';
const LINKS = ['probe', 'collector'];

export type ImageArch = 'amd64' | 'arm64';

export interface ImageResult {
  arch: ImageArch;
  tag: string;
  archive?: string;
  archiveBytes?: number;
  imageBytes: number;
  healthcheck: boolean;
}

function binFor(name: string, arch: ImageArch): string {
  return join(root, 'dist', 'bin', arch === 'amd64' ? name : `${name}-linux-arm64`);
}

/** Shared libraries of a binary, by absolute path, as the target's loader will look them up. */
function libsFor(bin: string, arch: ImageArch): string[] {
  if (arch === 'amd64') {
    const out = execFileSync('ldd', [bin], { encoding: 'utf8' });
    return [...out.matchAll(/(\/\S+)/g)].map((m) => m[1]!).filter((p) => p !== bin);
  }
  // arm64: the same set from Debian's cross libraries (/usr/aarch64-linux-gnu), placed where an
  // arm64 Debian keeps them.
  const names = ['libdl.so.2', 'libstdc++.so.6', 'libm.so.6', 'libgcc_s.so.1', 'libpthread.so.0', 'libc.so.6'];
  return [...names.map((n) => `/lib/aarch64-linux-gnu/${n}`), '/lib/ld-linux-aarch64.so.1'];
}

function hostPathFor(libPath: string, arch: ImageArch): string {
  if (arch === 'amd64') return libPath;
  const name = libPath.split('/').pop()!;
  return join('/usr/aarch64-linux-gnu/lib', name);
}

/** Lays out the image's root filesystem in `ctx/rootfs` and writes `ctx/Containerfile`. */
function prepareContext(ctx: string, arch: ImageArch): { healthcheck: boolean } {
  const rootfs = join(ctx, 'rootfs');
  const binDir = join(rootfs, 'usr', 'local', 'bin');
  mkdirSync(binDir, { recursive: true });
  const bin = binFor(AGENT, arch);
  copyFileSync(bin, join(binDir, AGENT));
  chmodSync(join(binDir, AGENT), 0o755);
  // Relative links: `probe` and `collector` on PATH start the agent under that name.
  for (const name of LINKS) symlinkSync(AGENT, join(binDir, name));
  const libs = new Set<string>(libsFor(bin, arch));
  // The HEALTHCHECK program (no shell or curl in the image). Only built for the machine's own
  // architecture when a C compiler is there (no arm64 cross compiler here).
  let healthcheck = false;
  if (arch === 'amd64' && spawnSync('cc', ['--version']).status === 0) {
    execFileSync('cc', ['-O2', '-s', '-o', join(binDir, 'healthcheck'), join(root, 'scripts', 'lib', 'healthcheck.c')]);
    for (const l of libsFor(join(binDir, 'healthcheck'), arch)) libs.add(l);
    healthcheck = true;
  }
  for (const l of libs) {
    const dest = join(rootfs, l);
    mkdirSync(dirname(dest), { recursive: true });
    copyFileSync(hostPathFor(l, arch), dest); // follows symlinks: the real file under the linked name
  }
  mkdirSync(join(rootfs, 'etc'), { recursive: true });
  mkdirSync(join(rootfs, 'tmp'), { recursive: true });
  chmodSync(join(rootfs, 'tmp'), 0o1777);
  writeFileSync(join(rootfs, 'etc', 'passwd'), 'nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n');
  writeFileSync(join(rootfs, 'etc', 'group'), 'nonroot:x:65532:\n');
  const lines = [
    'FROM scratch',
    'COPY rootfs/ /',
    'ENV PATH=/usr/local/bin',
    'USER 65532:65532',
    'EXPOSE 9000 9001',
    'LABEL org.opencontainers.image.title="starmap" \\',
    '      org.opencontainers.image.description="Starmap network-policy test agents: star-compatible probe and collector" \\',
    `      org.opencontainers.image.version="${version}" \\`,
    '      org.opencontainers.image.source="https://github.com/starmap/starmap" \\',
    '      org.opencontainers.image.licenses="Apache-2.0"',
    ...(healthcheck ? ['HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 CMD ["/usr/local/bin/healthcheck"]'] : []),
    'CMD ["probe", "--help"]',
  ];
  writeFileSync(join(ctx, 'Containerfile'), lines.join('\n') + '\n');
  return { healthcheck };
}

export type Compression = 'gzip' | 'zstd';

/** The compressed archive's file name ending and compressor. */
const COMPRESSORS: Record<Compression, { ext: string; stream: () => NodeJS.ReadWriteStream }> = {
  gzip: { ext: 'gz', stream: () => createGzip({ level: 9 }) },
  zstd: { ext: 'zst', stream: () => createZstdCompress({ params: { [zlibConstants.ZSTD_c_compressionLevel]: 19 } }) },
};

export async function buildImage(opts: {
  arch: ImageArch;
  store: string;
  save: boolean;
  compression?: Compression;
  log?: (s: string) => void;
}): Promise<ImageResult> {
  const log = opts.log ?? ((s: string) => console.log(s));
  // Always through the build: it is incremental, and an image of a stale executable is worse than a few seconds.
  log(`building ${AGENT} for ${opts.arch}`);
  const built = execFileSync(process.execPath, [join(root, 'scripts', 'build.ts'), AGENT, `--arch=${opts.arch === 'amd64' ? 'x64' : 'arm64'}`], {
    encoding: 'utf8',
    cwd: root,
  });
  log(built.trim());
  const podman = podmanIn(opts.store);
  const ctx = mkdtempSync(join(tmpdir(), 'starmap-image-'));
  try {
    const { healthcheck } = prepareContext(ctx, opts.arch);
    const tag = opts.arch === 'amd64' ? `localhost/starmap:${version}` : `localhost/starmap:${version}-arm64`;
    // --format docker keeps HEALTHCHECK (OCI image config has no field for it).
    const b = podman.run(['build', '--format', 'docker', '--platform', `linux/${opts.arch}`, '-t', tag, '-f', join(ctx, 'Containerfile'), ctx]);
    if (b.status !== 0) throw new Error(`podman build failed:\n${b.out}`);
    podman.run(['image', 'prune', '-f']); // the previous build of this tag, now untagged
    const size = podman.run(['image', 'inspect', '--format', '{{.Size}}', tag]);
    const result: ImageResult = { arch: opts.arch, tag, imageBytes: Number(size.out.trim()), healthcheck };
    if (opts.save) {
      const dir = join(root, 'dist', 'image');
      mkdirSync(dir, { recursive: true });
      const tar = join(dir, `starmap-${version}-${opts.arch}.tar`);
      rmSync(tar, { force: true });
      const s = podman.run(['save', '--format', 'docker-archive', '-o', tar, tag]);
      if (s.status !== 0) throw new Error(`podman save failed:\n${s.out}`);
      const compressor = COMPRESSORS[opts.compression ?? 'gzip'];
      const archive = `${tar}.${compressor.ext}`;
      await pipeline(createReadStream(tar), compressor.stream(), createWriteStream(archive));
      rmSync(tar);
      result.archive = archive;
      result.archiveBytes = statSync(archive).size;
    }
    return result;
  } finally {
    rmSync(ctx, { recursive: true, force: true });
  }
}

/** Bytes as megabytes for the summaries (here and in scripts/release.ts). */
export const mb = (n: number): string => `${(n / 1e6).toFixed(1)} MB`;

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const archArg = args.find((a) => a.startsWith('--arch='))?.slice(7) ?? 'amd64';
  const store = resolve(args.find((a) => a.startsWith('--store='))?.slice(8) ?? join(root, 'dist', '.podman'));
  const save = !args.includes('--no-save');
  const compression = args.find((a) => a.startsWith('--compression='))?.slice('--compression='.length) ?? 'gzip';
  if (!Object.hasOwn(COMPRESSORS, compression)) {
    console.error(`image: error: invalid value for --compression: ${JSON.stringify(compression)} (expected gzip or zstd)`);
    process.exit(2);
  }
  if (!hasPodman()) {
    console.error('podman is not installed: install it (apt-get install podman runc) or build with the Dockerfile');
    process.exit(1);
  }
  const archs: ImageArch[] = archArg === 'all' ? ['amd64', 'arm64'] : [archArg as ImageArch];
  for (const arch of archs) {
    const r = await buildImage({ arch, store, save, compression: compression as Compression });
    console.log(
      `image ${r.tag} (${arch}): ${mb(r.imageBytes)} uncompressed${r.archive ? `, ${r.archive} ${mb(r.archiveBytes!)} compressed` : ''}${r.healthcheck ? '' : ', no HEALTHCHECK program'}`,
    );
  }
  console.log(`podman store: CONTAINERS_CONF=${join(store, 'containers.conf')} CONTAINERS_STORAGE_CONF=${join(store, 'storage.conf')}`);
}

if (import.meta.filename === resolve(process.argv[1] ?? '')) await main();
