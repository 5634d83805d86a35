// Every test file removes the folders it made with tempDir() when it ends (a vitest setup file,
// so no file can forget it). Hooks run in reverse order of registration, so this runs after the
// file's own afterAll hooks have stopped the processes that used those folders.
import { afterAll } from 'vitest';
import { removeTempDirs } from './process.ts';

afterAll(removeTempDirs);
