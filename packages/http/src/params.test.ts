import { z } from 'zod';
import {
  ApiParamValidationError,
  RequestConfusingParamsError,
  RequestVariableMissingError,
} from '@parley/errors';
import { p, parseJsonOrText, parseParams, parsePathParams } from './params';

function parse<S extends Parameters<typeof parseParams>[0]>(
  shape: S,
  body: Record<string, unknown> = {},
  query: Record<string, unknown> = {},
) {
  return parseParams(shape, { body, query });
}

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected an error');
}

describe('parameter sources', () => {
  it('reads the body before the query string, as Zulip reads POST before GET', () => {
    const { values } = parse({ name: p.string() }, { name: 'from-body' }, { name: 'from-query' });
    expect(values.name).toBe('from-body');
  });

  it('falls back to the query string when the body lacks the parameter', () => {
    const { values } = parse({ name: p.string() }, {}, { name: 'from-query' });
    expect(values.name).toBe('from-query');
  });

  it('keeps the last value of a repeated key, like QueryDict', () => {
    const { values } = parse({ n: p.int() }, {}, { n: ['1', '2', '3'] });
    expect(values.n).toBe(3);
  });

  it('decodes JSON-typed parameters from their JSON text', () => {
    const { values } = parse(
      { n: p.int(), flag: p.bool(), to: p.json(z.array(z.number().int())) },
      { n: '5', flag: 'true', to: '[1,2]' },
    );
    expect(values).toEqual({ n: 5, flag: true, to: [1, 2] });
  });

  it('lists undeclared keys of body and query, sorted and without duplicates', () => {
    const { ignored } = parse(
      { a: p.string() },
      { a: 'x', zeta: '1', beta: '2' },
      { beta: '3', alpha: '4' },
    );
    expect(ignored).toEqual(['alpha', 'beta', 'zeta']);
  });

  it('does not list aliases as ignored', () => {
    const { values, ignored } = parse(
      { channel: p.string().alias('stream') },
      { stream: 'general' },
    );
    expect(values.channel).toBe('general');
    expect(ignored).toEqual([]);
  });

  it('rejects two aliases of one parameter with REQUEST_CONFUSING_VAR', () => {
    const error = errorOf(() =>
      parse({ channel: p.string().alias('stream') }, { channel: 'a', stream: 'b' }),
    );
    expect(error).toBeInstanceOf(RequestConfusingParamsError);
    expect(error.message).toBe("Can't decide between 'channel' and 'stream' arguments");
  });
});

describe('required, optional and default', () => {
  it("reports a missing parameter as Missing 'x' argument with var_name", () => {
    const error = errorOf(() => parse({ emoji_name: p.string() }));
    expect(error).toBeInstanceOf(RequestVariableMissingError);
    expect(error.message).toBe("Missing 'emoji_name' argument");
    expect((error as RequestVariableMissingError).data).toEqual({ var_name: 'emoji_name' });
    expect((error as RequestVariableMissingError).code).toBe('REQUEST_VARIABLE_MISSING');
  });

  it('leaves an absent optional parameter undefined and fills in defaults', () => {
    const { values } = parse({ a: p.string().optional(), b: p.bool().default(true) });
    expect(values).toEqual({ a: undefined, b: true });
  });

  it('treats an empty string as present', () => {
    expect(parse({ topic: p.string() }, { topic: '' }).values.topic).toBe('');
  });
});

describe('types and Zulip wording', () => {
  const cases: [string, Parameters<typeof parseParams>[0], string, string][] = [
    ['a word for an integer', { n: p.int() }, 'abc', 'n is not an integer'],
    ['a fraction for an integer', { n: p.int() }, '1.5', 'n is not an integer'],
    ['an exponent for an integer', { n: p.int() }, '1e3', 'n is not an integer'],
    ['an empty integer', { n: p.int() }, '', 'n is not an integer'],
    ['an integer beyond int32', { n: p.int() }, '2147483648', 'n is too large'],
    ['an integer below the minimum', { n: p.int({ min: 1 }) }, '0', 'n is too small'],
    ['a word for a boolean', { b: p.bool() }, 'yes', 'b is not a boolean'],
    ['broken JSON', { to: p.json(z.array(z.number())) }, '[1,', 'to is not valid JSON'],
    ['a dict for a list', { to: p.json(z.array(z.number())) }, '{}', 'to is not a list'],
    [
      'a list for a dict',
      { d: p.json(z.record(z.string(), z.boolean())) },
      '[]',
      'd is not a dict',
    ],
    [
      'a string inside an integer list',
      { to: p.json(z.array(z.number().int())) },
      '[1,"x"]',
      'to[1] is not an integer',
    ],
    [
      'a bad nested field',
      { d: p.json(z.object({ id: z.number().int() })) },
      '{"id":"x"}',
      "d['id'] is not an integer",
    ],
    [
      'an unexpected nested key',
      { d: p.json(z.strictObject({ id: z.number() })) },
      '{"id":1,"x":2}',
      'Argument "x" at d is unexpected',
    ],
    ['a value outside an enum', { op: p.enum(['add', 'remove']) }, 'toggle', 'Invalid op'],
    [
      'a too long string',
      { t: p.string({ maxLength: 3 }) },
      'abcd',
      't is too long (limit: 3 characters)',
    ],
    ['a blank required string', { t: p.string({ nonEmpty: true }) }, '', 't cannot be blank'],
    [
      'a string blank once stripped',
      { t: p.string({ nonEmpty: true, trim: true }) },
      ' \n ',
      't cannot be blank',
    ],
    ['a null byte in a string', { t: p.string() }, 'a\0b', 'Invalid t: null bytes are not allowed'],
    [
      'a null byte inside JSON',
      { d: p.json(z.array(z.string())) },
      '["a\\u0000"]',
      'Invalid d: null bytes are not allowed',
    ],
  ];

  it.each(cases)('rejects %s', (_label, shape, raw, message) => {
    const name = Object.keys(shape)[0]!;
    const error = errorOf(() => parse(shape, { [name]: raw }));
    expect(error).toBeInstanceOf(ApiParamValidationError);
    expect((error as ApiParamValidationError).code).toBe('BAD_REQUEST');
    expect(error.message).toBe(message);
  });

  it('counts the length of a string in characters, as Zulip and VARCHAR do', () => {
    const t = p.string({ maxLength: 3 });
    expect(parse({ t }, { t: '😀😀😀' }).values.t).toBe('😀😀😀');
    expect(errorOf(() => parse({ t }, { t: '😀😀😀😀' })).message).toBe(
      't is too long (limit: 3 characters)',
    );
  });

  it('strips a string when asked to, before its length is checked', () => {
    const t = p.string({ trim: true, maxLength: 3 });
    expect(parse({ t }, { t: '  abc  ' }).values.t).toBe('abc');
  });

  it('accepts negative integers, JSON scalars and booleans', () => {
    const { values } = parse(
      {
        last_event_id: p.int(),
        dont_block: p.bool(),
        anchor: p.json(z.union([z.number(), z.string()])),
      },
      { last_event_id: '-1', dont_block: 'true', anchor: '"newest"' },
    );
    expect(values).toEqual({ last_event_id: -1, dont_block: true, anchor: 'newest' });
  });

  it('parses path parameters with the same types', () => {
    expect(parsePathParams({ user_id: p.int() }, { user_id: '42' })).toEqual({ user_id: 42 });
    expect(errorOf(() => parsePathParams({ user_id: p.int() }, { user_id: 'me' })).message).toBe(
      'user_id is not an integer',
    );
  });
});

describe('parseJsonOrText', () => {
  /** What it must give: JSON.parse's value, or the text when JSON.parse throws. */
  const reference = (raw: string): unknown => {
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      return raw;
    }
  };

  it('gives JSON.parse’s value, or the text itself when it is not JSON', () => {
    const cases = [
      ...['general', 'news', 'nullify', 'true story', 'tru', '2024 plans', '1,2,3', '-', ''],
      ...[' ', 'Ünïcode', '#general', '\u00a0[1]', '\v1', '{oops', '[1,', '"open'],
      ...['42', '-1', ' 42 ', '1e3', '[1,2]', '\t[42]\n', '{"a":1}', '"general"', ' "x" '],
      ...['true', 'false', 'null', ' true ', 'null\r\n'],
    ];
    for (const raw of cases) expect([raw, parseJsonOrText(raw)]).toEqual([raw, reference(raw)]);
  });

  it('agrees with JSON.parse on every short text of JSON’s characters and a few others', () => {
    const alphabet = [...' \t\n[]{}",:-0123456789.etrufalsnx\u00a0'];
    let seed = 7;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    for (let i = 0; i < 20_000; i++) {
      const length = 1 + Math.floor(random() * 7);
      const raw = Array.from(
        { length },
        () => alphabet[Math.floor(random() * alphabet.length)],
      ).join('');
      expect([raw, parseJsonOrText(raw)]).toEqual([raw, reference(raw)]);
    }
  });
});
