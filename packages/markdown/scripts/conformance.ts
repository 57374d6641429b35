// pnpm md:conformance [cases.json]: renders every case of a Zulip Markdown fixture file
// (default ../shared/reference/markdown-cases-public.json, beside the repository) and compares
// with Zulip's HTML. Syntax-highlighting token spans inside codehilite blocks are removed from
// both sides first: token-level highlighting need not match. Prints the misses, then
// "N passed, M failed" as the last line.
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { renderMarkdown } from '../src/index';

interface Case {
  name: string;
  input: string;
  expected_output: string;
  translate_emoticons?: boolean;
}

const repoRoot = resolve(__dirname, '..', '..', '..');
const file = resolve(
  process.argv[2] ?? resolve(repoRoot, '..', 'shared', 'reference', 'markdown-cases-public.json'),
);

if (!existsSync(file)) {
  console.log(`No cases file at ${file}; skipping the Markdown conformance run.`);
  console.log('0 passed, 0 failed');
  process.exit(0);
}

const cases = (JSON.parse(readFileSync(file, 'utf8')) as { regular_tests: Case[] }).regular_tests;

/** Drops every <span …> and </span> inside codehilite blocks. */
export function withoutHighlighting(html: string): string {
  return html.replace(/<div class="codehilite"[^>]*>[\s\S]*?<\/div>/g, (block) =>
    block.replace(/<\/?span[^>]*>/g, ''),
  );
}

let passed = 0;
const misses: string[] = [];
for (const testCase of cases) {
  const actual = renderMarkdown(testCase.input, undefined, {
    translateEmoticons: testCase.translate_emoticons === true,
    // Zulip renders its fixture for its test organization, at this URL.
    realmUrl: 'http://zulip.testserver',
  }).html;
  if (withoutHighlighting(actual) === withoutHighlighting(testCase.expected_output)) {
    passed += 1;
  } else {
    misses.push(
      `✗ ${testCase.name}\n  input:    ${JSON.stringify(testCase.input)}\n  expected: ${JSON.stringify(testCase.expected_output)}\n  actual:   ${JSON.stringify(actual)}`,
    );
  }
}
for (const miss of misses) console.log(miss);
console.log(`matched ${passed}/${cases.length} (${Math.round((100 * passed) / cases.length)}%)`);
console.log(`${passed} passed, ${cases.length - passed} failed`);
