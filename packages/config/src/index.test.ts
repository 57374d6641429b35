import { ConfigError, parseConfig } from './index';

const minimal = {
  DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/parley',
  REDIS_URL: 'redis://127.0.0.1:6379',
};

describe('parseConfig', () => {
  it('fills in defaults around the two required URLs', () => {
    const config = parseConfig(minimal);
    expect(config).toMatchObject({
      PORT: 9991,
      EXTERNAL_HOST: 'localhost:9991',
      EXTERNAL_URL_SCHEME: 'http',
      EVENT_SHARDS: 16,
      MAX_REQUEST_BODY_MIB: 25,
      LOG_FORMAT: 'pretty',
      TRUST_PROXY: false,
    });
  });

  it('logs JSON in production unless told otherwise', () => {
    expect(parseConfig({ ...minimal, NODE_ENV: 'production' }).LOG_FORMAT).toBe('json');
    expect(
      parseConfig({ ...minimal, NODE_ENV: 'production', LOG_FORMAT: 'pretty' }).LOG_FORMAT,
    ).toBe('pretty');
  });

  it('coerces numbers and booleans from their text', () => {
    const config = parseConfig({
      ...minimal,
      PORT: '8080',
      TRUST_PROXY: 'true',
      EVENT_SHARDS: '4',
    });
    expect([config.PORT, config.TRUST_PROXY, config.EVENT_SHARDS]).toEqual([8080, true, 4]);
  });

  it('merges RATE_LIMITING_RULES over Zulip’s defaults, by domain', () => {
    expect(parseConfig(minimal).RATE_LIMITING_RULES).toEqual({
      api_by_user: [[60, 200]],
      api_by_ip: [[60, 100]],
      authenticate_by_username: [[1800, 5]],
      email_mirror_by_realm: [
        [60, 50],
        [300, 120],
        [3600, 600],
      ],
      email_change_by_user: [
        [3600, 2],
        [86400, 5],
      ],
    });
    const rules = parseConfig({
      ...minimal,
      RATE_LIMITING_RULES: '{"api_by_user": [[3600, 5000], [60, 400]], "api_by_ip": []}',
    }).RATE_LIMITING_RULES;
    expect(rules).toEqual({
      api_by_user: [
        [60, 400],
        [3600, 5000],
      ],
      api_by_ip: [],
      authenticate_by_username: [[1800, 5]],
      email_mirror_by_realm: [
        [60, 50],
        [300, 120],
        [3600, 600],
      ],
      email_change_by_user: [
        [3600, 2],
        [86400, 5],
      ],
    });
    for (const bad of [
      '{',
      '{"api_by_users": [[60, 1]]}',
      '{"api_by_user": [[0, 1]]}',
      '{"api_by_user": [[60, 1], [60, 5]]}',
    ]) {
      expect(() => parseConfig({ ...minimal, RATE_LIMITING_RULES: bad })).toThrow(
        /RATE_LIMITING_RULES/,
      );
    }
  });

  it('treats empty variables as unset', () => {
    expect(parseConfig({ ...minimal, PORT: '' }).PORT).toBe(9991);
  });

  it('lists every problem at once', () => {
    let error: unknown;
    try {
      parseConfig({ PORT: 'eighty', EXTERNAL_HOST: 'not a host', REDIS_URL: 'http://x' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.map((line) => line.split(':')[0]);
    expect(problems.sort()).toEqual(['DATABASE_URL', 'EXTERNAL_HOST', 'PORT', 'REDIS_URL']);
    expect((error as ConfigError).message).toContain('Invalid configuration:\n  - ');
  });
  it("has Zulip's invitation defaults and the log email backend", () => {
    expect(parseConfig(minimal)).toMatchObject({
      INVITATION_LINK_VALIDITY_MINUTES: 14400,
      INVITES_DEFAULT_REALM_DAILY_MAX: 100,
      INVITES_NEW_REALM_DAYS: 7,
      INVITES_NEW_REALM_LIMIT_DAYS: [],
      INVITES_MIN_USER_AGE_DAYS: 3,
      EMAIL_BACKEND: 'log',
      EMAIL_DIR: '.parley/emails',
    });
    expect(
      parseConfig({ ...minimal, INVITES_NEW_REALM_LIMIT_DAYS: '[[1, 10], [7, 50]]' })
        .INVITES_NEW_REALM_LIMIT_DAYS,
    ).toEqual([
      [1, 10],
      [7, 50],
    ]);
  });

  it('sends the bouncer its key over https only, or to this machine', () => {
    const base = { DATABASE_URL: 'postgresql://a@b/c', REDIS_URL: 'redis://r' };
    expect(() => parseConfig({ ...base, PUSH_BOUNCER_URL: 'http://push.example.com' })).toThrow(
      /PUSH_BOUNCER_URL: must be https/,
    );
    expect(
      parseConfig({ ...base, PUSH_BOUNCER_URL: 'http://127.0.0.1:9000' }).PUSH_BOUNCER_URL,
    ).toBe('http://127.0.0.1:9000');
    expect(parseConfig(base).PUSH_BOUNCER_URL).toBe('https://push.zulipchat.com');
  });

  it('checks the email and invitation settings', () => {
    const problems = (env: Record<string, string>) => {
      try {
        parseConfig({ ...minimal, ...env });
        return [];
      } catch (error) {
        return (error as ConfigError).problems;
      }
    };
    expect(problems({ EMAIL_BACKEND: 'smtp' })).toEqual([
      'SMTP_URL: is required when EMAIL_BACKEND is smtp',
    ]);
    expect(
      problems({ EMAIL_BACKEND: 'smtp', SMTP_URL: 'smtps://u:p@mail.example.com:465' }),
    ).toEqual([]);
    expect(problems({ EMAIL_BACKEND: 'pigeon' })[0]).toMatch(/^EMAIL_BACKEND: /);
    expect(problems({ SMTP_URL: 'http://mail.example.com' })[0]).toMatch(/^SMTP_URL: /);
    expect(problems({ NOREPLY_EMAIL_ADDRESS: 'nobody' })[0]).toMatch(/^NOREPLY_EMAIL_ADDRESS: /);
    expect(problems({ INVITES_NEW_REALM_LIMIT_DAYS: 'lots' })[0]).toMatch(
      /^INVITES_NEW_REALM_LIMIT_DAYS: must be JSON/,
    );
    expect(problems({ INVITES_NEW_REALM_LIMIT_DAYS: '[[0, 5]]' })[0]).toMatch(
      /^INVITES_NEW_REALM_LIMIT_DAYS/,
    );
    expect(problems({ INVITATION_LINK_VALIDITY_MINUTES: '0' })[0]).toMatch(
      /^INVITATION_LINK_VALIDITY_MINUTES: /,
    );
  });
});
