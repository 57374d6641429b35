import { subdomainFromHost } from './realm';

describe('subdomainFromHost', () => {
  it.each([
    ['localhost:9991', 'localhost:9991', ''],
    ['LOCALHOST:9991', 'localhost:9991', ''],
    ['acme.localhost:9991', 'localhost:9991', 'acme'],
    ['Acme.LocalHost:9991', 'localhost:9991', 'acme'],
    ['a.b.localhost:9991', 'localhost:9991', 'a.b'],
    ['elsewhere.test', 'localhost:9991', ''],
    ['localhost:8000', 'localhost:9991', ''],
    ['chat.example.com:443', 'chat.example.com', ''],
    ['acme.chat.example.com', 'chat.example.com', 'acme'],
    ['acme.chat.example.com:8443', 'chat.example.com', 'acme'],
    ['', 'localhost:9991', ''],
  ])('maps host %p under EXTERNAL_HOST %p to subdomain %p', (host, external, subdomain) => {
    expect(subdomainFromHost(host, external)).toBe(subdomain);
  });
});
