import net from 'node:net';

/** Parsed ABACUS_WEBHOOK_ALLOWED_HOSTS: host names (lower case) and address ranges. */
export interface HostAllowList {
  hosts: string[];
  /** IP addresses and CIDR ranges as written, e.g. 127.0.0.1, 10.0.0.0/8, fd00::/8 */
  ranges: string[];
}

const HOSTNAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** `a.example, 10.0.0.0/8 ,127.0.0.1` → host names and ranges; throws naming a bad entry. */
export function parseHostAllowList(raw: string): HostAllowList {
  const list: HostAllowList = { hosts: [], ranges: [] };
  for (const entry of raw
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean)) {
    const [addr, bits, extra] = entry.split('/');
    const family = net.isIP(addr);
    if (family) {
      const max = family === 4 ? 32 : 128;
      if (extra !== undefined || (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= max))) {
        throw new Error(`"${entry}" is not an IP address or CIDR range`);
      }
      list.ranges.push(entry);
    } else if (bits === undefined && HOSTNAME.test(entry)) {
      list.hosts.push(entry);
    } else {
      throw new Error(`"${entry}" is neither a host name, an IP address nor a CIDR range`);
    }
  }
  return list;
}

/** Addresses a webhook must not reach unless allowed: loopback, private, link-local, CGNAT, multicast, reserved. */
const NON_PUBLIC = new net.BlockList();
for (const [a, p] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  NON_PUBLIC.addSubnet(a, p, 'ipv4');
for (const [a, p] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
] as const)
  NON_PUBLIC.addSubnet(a, p, 'ipv6');

/** ::ffff:a.b.c.d is the IPv4 address a.b.c.d for every purpose here. */
function normalize(address: string): { address: string; family: 'ipv4' | 'ipv6' } {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return { address: mapped[1], family: 'ipv4' };
  return { address, family: net.isIP(address) === 6 ? 'ipv6' : 'ipv4' };
}

export function isPublicAddress(address: string): boolean {
  const a = normalize(address);
  return !NON_PUBLIC.check(a.address, a.family);
}

function inRanges(address: string, ranges: string[]): boolean {
  const a = normalize(address);
  const list = new net.BlockList();
  for (const r of ranges) {
    const [addr, bits] = r.split('/');
    const fam = net.isIP(addr) === 6 ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(normalize(addr).address, normalize(addr).family);
    else list.addSubnet(addr, Number(bits), fam);
  }
  return list.check(a.address, a.family);
}

/**
 * Whether a webhook to `host` may connect to `address`. With an empty allow-list only public addresses
 * are allowed; with entries, only a listed host name or an address inside a listed range.
 */
export function addressAllowed(host: string, address: string, allow: HostAllowList): boolean {
  const empty = allow.hosts.length === 0 && allow.ranges.length === 0;
  if (empty) return isPublicAddress(address);
  return allow.hosts.includes(host.toLowerCase().replace(/\.$/, '')) || inRanges(address, allow.ranges);
}

/** The reason a configured webhook URL is refused before any lookup (scheme, credentials, literal address), or null. */
export function webhookUrlProblem(raw: string, allow: HostAllowList): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'not a URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http or https URL';
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const literal = net.isIP(host) ? host : host === 'localhost' || host.endsWith('.localhost') ? '127.0.0.1' : null;
  if (literal && !addressAllowed(host, literal, allow)) {
    return `host ${host} is a loopback, private or link-local address or not in ABACUS_WEBHOOK_ALLOWED_HOSTS; list it there to allow it`;
  }
  return null;
}
