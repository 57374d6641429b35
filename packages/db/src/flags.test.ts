import { bitmaskToFlags, flagBit, flagsToBitmask } from './flags';

describe('UserMessage flag bitmask', () => {
  it("uses Zulip's bit positions", () => {
    expect(flagBit('read')).toBe(1n);
    expect(flagBit('starred')).toBe(2n);
    expect(flagBit('mentioned')).toBe(8n);
    expect(flagBit('historical')).toBe(2048n);
    expect(flagBit('is_private')).toBe(4096n);
  });

  it('round-trips a set of flags', () => {
    const mask = flagsToBitmask(['read', 'starred', 'has_alert_word']);
    expect(mask).toBe(1n | 2n | 1024n);
    expect(bitmaskToFlags(mask)).toEqual(['read', 'starred', 'has_alert_word']);
    expect(bitmaskToFlags(0n)).toEqual([]);
  });
});
