// pnpm exec tsx packages/markdown/scripts/generate-emoji-names.ts: builds Zulip's emoji name
// table (src/generated/emoji-names.json) from its sources, following the rules of Zulip's
// tools/setup/emoji/generate_emoji_names as of zulip/zulip commit 0289beb (2023-08-10, Zulip
// 8.0-dev): the era of the Markdown fixture we conform to. The sources are iamcal's
// emoji-datasource (which emoji exist, in what order), the English CLDR annotations (a name and
// aliases for each) and Zulip's own names of that era (data/zulip-custom-emoji-names.json),
// which win over CLDR. The output is committed, so rendering and reactions need none of these
// packages at run time.
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';

export interface EmojiNames {
  canonical_name: string;
  aliases: string[];
}

/** The parts of an emoji-datasource entry the table needs. */
export interface DatasourceEmoji {
  unified: string;
  /** The form without U+FE0F where it differs from `unified`; null (or absent) otherwise. */
  non_qualified?: string | null;
}

/** CLDR's annotations for one emoji: `tts` is the one spoken name, `default` its keywords. */
export interface CldrAnnotation {
  default?: string[];
  tts?: string[];
}

export interface EmojiNameSources {
  /** emoji-datasource's emoji.json, in its own order (sorted by code point). */
  datasource: readonly DatasourceEmoji[];
  /** CLDR annotations and derived annotations, keyed by the emoji without U+FE0F. */
  cldr: Readonly<Record<string, CldrAnnotation>>;
  /** Zulip's hand-picked names, keyed by emoji code. */
  custom: Readonly<Record<string, EmojiNames>>;
}

// Zulip offers one clock face (1f557, "time"); the 23 others only crowd the picker.
const SKIPPED_CLOCKS = new Set(
  [...range(0x1f550, 0x1f556), ...range(0x1f558, 0x1f567)].map((point) => point.toString(16)),
);
// Skin tones are modifiers, not emoji one would search for on their own.
const SKIN_TONES = new Set(range(0x1f3fb, 0x1f3ff).map((point) => point.toString(16)));

// Names with no ASCII spelling: they already have ASCII aliases to type instead.
const NO_ASCII_SPELLING = new Set(['ココ', 'サ', '指', '空']);

// Letters CLDR names use beyond ASCII and how the ASCII alias spells them.
const ASCII_LETTERS: Record<string, string> = {
  è: 'e',
  ǐ: 'i',
  ó: 'o',
  ā: 'a',
  ō: 'o',
  ñ: 'n',
  ô: 'o',
  ç: 'c',
  é: 'e',
  ã: 'a',
  í: 'i',
  å: 'a',
  ü: 'u',
};

function range(first: number, last: number): number[] {
  return Array.from({ length: last - first + 1 }, (_, index) => first + index);
}

/** The emoji code Zulip uses everywhere: code points in lowercase hex (four digits at least),
 * joined by '-', with every U+FE0F dropped so qualified and unqualified forms agree. */
export function datasourceEmojiCode(unified: string): string {
  return unified
    .split('-')
    .map((hex) => parseInt(hex, 16))
    .filter((point) => point !== 0xfe0f)
    .map((point) => point.toString(16).padStart(4, '0'))
    .join('-');
}

/** The emoji itself without U+FE0F, the key of CLDR's annotations. As in Zulip's script of
 * that era, it is spelled from `non_qualified` where the datasource gives one, else from
 * `unified`, with any U+FE0F left in either dropped (iamcal/emoji-data#217: `non_qualified` is
 * not always filled in). */
function unqualifiedEmoji({ unified, non_qualified }: DatasourceEmoji): string {
  return String.fromCodePoint(
    ...(non_qualified || unified)
      .split('-')
      .filter((hex) => hex !== 'FE0F')
      .map((hex) => parseInt(hex, 16)),
  );
}

/** A CLDR phrase as an emoji name: "woman’s hat" → womans_hat, "A & B" → a_and_b. */
export function cleanupName(phrase: string): string {
  return phrase
    .replace(/[ \-–]/g, '_')
    .replace(/[“”:.,()‘’']/g, '')
    .replace(/&/g, 'and')
    .replace(/_{2,}/g, '_')
    .toLowerCase();
}

function isAscii(name: string): boolean {
  return [...name].every((char) => char.codePointAt(0)! < 0x80);
}

function asciiSpelling(name: string): string {
  const ascii = [...name].map((char) => ASCII_LETTERS[char] ?? char).join('');
  if (!isAscii(ascii))
    throw new Error(`${ascii} still has non-ASCII letters: add them to ASCII_LETTERS.`);
  return ascii;
}

/** Removes the first occurrence, failing loudly if it is missing: the steps below rely on
 * their bookkeeping being exact. */
function removeFirst(list: string[], item: string): void {
  const index = list.indexOf(item);
  if (index < 0) throw new Error(`${item} is not in [${list.join(', ')}]`);
  list.splice(index, 1);
}

/** Step 1: a first draft, in datasource order. Zulip's names where it has them, else CLDR's
 * spoken name with its keywords as aliases. */
function draftNames(sources: EmojiNameSources): Map<string, EmojiNames> {
  const table = new Map<string, EmojiNames>();
  const canonicalNames = new Set<string>();
  const claim = (name: string, code: string) => {
    if (canonicalNames.has(name))
      throw new Error(`${name} is already the name of another emoji; rename ${code}.`);
    canonicalNames.add(name);
  };
  for (const emoji of sources.datasource) {
    const code = datasourceEmojiCode(emoji.unified);
    if (SKIPPED_CLOCKS.has(code) || SKIN_TONES.has(code)) continue;
    const custom = sources.custom[code];
    if (custom) {
      claim(cleanupName(custom.canonical_name), code);
      table.set(code, { canonical_name: custom.canonical_name, aliases: [...custom.aliases] });
      continue;
    }
    const annotation = sources.cldr[unqualifiedEmoji(emoji)];
    if (!annotation) {
      console.warn(`${code} has neither a Zulip name nor a CLDR annotation; skipped.`);
      continue;
    }
    if (annotation.tts?.length !== 1) throw new Error(`${code} has no single CLDR tts name.`);
    const canonical = cleanupName(annotation.tts[0]!.trim());
    claim(canonical, code);
    const aliases = (annotation.default ?? []).map((alias) => cleanupName(alias.trim()));
    table.set(code, { canonical_name: canonical, aliases });
  }
  return table;
}

/** Steps 2 and 3: every name must point at one emoji. Aliases that are some emoji's
 * canonical name go; an alias several emoji share stays only with those Zulip named by hand
 * (no CLDR emoji is the obvious owner). Returns which emoji use each remaining alias. */
function dropCollidingAliases(
  table: Map<string, EmojiNames>,
  custom: EmojiNameSources['custom'],
): Map<string, string[]> {
  const canonicalNames = new Set([...table.values()].map((names) => names.canonical_name));
  const users = new Map<string, string[]>();
  for (const [code, names] of table) {
    for (const alias of [...names.aliases]) {
      if (canonicalNames.has(alias)) removeFirst(names.aliases, alias);
      else users.set(alias, [...(users.get(alias) ?? []), code]);
    }
  }
  for (const [alias, codes] of users) {
    if (codes.length < 2) continue;
    for (const code of codes) if (!custom[code]) removeFirst(table.get(code)!.aliases, alias);
  }
  return users;
}

/** Step 4: a name spelled with non-ASCII letters (piñata) also gets its ASCII spelling as an
 * alias, taken away from any other emoji that had it. */
function addAsciiAliases(table: Map<string, EmojiNames>, users: Map<string, string[]>): void {
  for (const names of table.values()) {
    for (const name of [names.canonical_name, ...names.aliases]) {
      if (NO_ASCII_SPELLING.has(name)) {
        if (!names.aliases.some(isAscii)) throw new Error(`${name} needs an ASCII alias.`);
        continue;
      }
      if (isAscii(name)) continue;
      const ascii = asciiSpelling(name);
      for (const code of users.get(ascii) ?? []) removeFirst(table.get(code)!.aliases, ascii);
      names.aliases.push(ascii);
    }
  }
}

/** Zulip's emoji name table, in datasource order: code → canonical name and aliases. */
export function generateEmojiNames(sources: EmojiNameSources): Map<string, EmojiNames> {
  const table = draftNames(sources);
  const users = dropCollidingAliases(table, sources.custom);
  addAsciiAliases(table, users);
  return table;
}

function readJson(path: string): unknown {
  return JSON.parse(readFileSync(path, 'utf8'));
}

/** The installed sources: emoji-datasource and the CLDR packages (the "modern" ones, as Zulip
 * then used) are devDependencies of @parley/markdown; derived annotations (skin-tone and other
 * sequences) extend the base ones. */
export function loadEmojiNameSources(): EmojiNameSources {
  const base = readJson(require.resolve('cldr-annotations-modern/annotations/en/annotations.json'));
  const derived = readJson(
    require.resolve('cldr-annotations-derived-modern/annotationsDerived/en/annotations.json'),
  );
  return {
    datasource: readJson(require.resolve('emoji-datasource/emoji.json')) as DatasourceEmoji[],
    cldr: {
      ...(base as { annotations: { annotations: Record<string, CldrAnnotation> } }).annotations
        .annotations,
      ...(derived as { annotationsDerived: { annotations: Record<string, CldrAnnotation> } })
        .annotationsDerived.annotations,
    },
    custom: readJson(resolve(__dirname, '..', 'data', 'zulip-custom-emoji-names.json')) as Record<
      string,
      EmojiNames
    >,
  };
}

export const GENERATED_FILE = resolve(__dirname, '..', 'src', 'generated', 'emoji-names.json');

/** Writes the table as JSON, keys in datasource order, formatted as the repository's Prettier
 * would (so `prettier --check` passes on the committed file). */
async function main(): Promise<void> {
  // Loaded here, not at the top: tests import this module for generateEmojiNames only.
  const { format, resolveConfig } = await import('prettier');
  const table = generateEmojiNames(loadEmojiNameSources());
  // By hand, not Object.fromEntries: a plain object would move keys like "2764" to the front.
  const entries = [...table].map(
    ([code, names]) => `${JSON.stringify(code)}:${JSON.stringify(names)}`,
  );
  const json = `{${entries.join(',')}}`;
  const options = (await resolveConfig(GENERATED_FILE)) ?? {};
  writeFileSync(GENERATED_FILE, await format(json, { ...options, filepath: GENERATED_FILE }));
  console.log(`Wrote ${table.size} emoji to ${GENERATED_FILE}`);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
