declare module 'zulip-js';
