// The request log never writes a path segment that is a secret.
import { loggablePath } from './middleware';

describe('loggablePath', () => {
  it("hides an email-change link's key and a data export's random directory", () => {
    expect(loggablePath('/accounts/confirm_new_email/abcdefghijklmnopqrstuvwx/')).toBe(
      '/accounts/confirm_new_email/<key>/',
    );
    expect(loggablePath('/Accounts/Confirm_New_Email/abcdefghijklmnopqrstuvwx')).toBe(
      '/Accounts/Confirm_New_Email/<key>',
    );
    expect(loggablePath('/user_avatars/exports/7/Zr3x-q/zulip-export-1.tar.gz')).toBe(
      '/user_avatars/exports/7/<secret>',
    );
  });

  it('leaves every other path as it is', () => {
    for (const path of ['/api/v1/messages', '/user_uploads/7/ab/file.png', '/accounts/login/'])
      expect(loggablePath(path)).toBe(path);
  });
});
