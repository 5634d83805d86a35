// Debian's chromium driven by playwright-core, launched the way this machine allows: headless, no
// sandbox (root), and no background networking (the machine has no network beyond loopback).
import { existsSync, rmSync } from 'node:fs';
import type { BrowserContext } from 'playwright-core';
import { tempDir } from './process.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const haveChromium = existsSync(CHROMIUM);
/** Headless, as root, and without the background connections this machine's closed network refuses. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Says once, visibly, why browser tests are skipped. */
export function warnIfNoChromium(what: string): void {
  if (!haveChromium) console.warn(`${what} skipped: ${CHROMIUM} is missing (apt-get install chromium)`);
}

export interface Browser {
  context: BrowserContext;
  close: () => Promise<void>;
}

export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  const profile = tempDir('starmap-chromium-');
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
