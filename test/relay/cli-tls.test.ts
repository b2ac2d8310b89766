// `hr-relay admin tls self-signed` as an operator runs it, checked with Node's
// own X509Certificate (not the library that made it); and the admin CLI
// talking to a service that serves HTTPS, trusting only the certificate whose
// fingerprint the service recorded in server.json.
import t from 'tap'
import { X509Certificate, createPrivateKey } from 'node:crypto'
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runMain } from '../helpers/cli.ts'
import { startTestService } from '../helpers/service.ts'
import { makeCert } from '../helpers/tls.ts'

async function tempDir (t: { teardown (fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-cli-tls-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  return dir
}

const DAY = 86_400_000

t.test('writes key.pem (0600) and cert.pem with the SAN, validity and fingerprint it prints', async t => {
  const dir = await tempDir(t)
  const before = Date.now()
  const r = await runMain(['admin', 'tls', 'self-signed', '--hostname', 'gym.lan', '--ip', '192.168.1.5', '--ip', 'fd00::5', '--days', '30', '--data-dir', dir])
  t.equal(r.code, 0, r.stderr)
  t.equal(r.stderr, '')
  const certPem = await readFile(join(dir, 'cert.pem'), 'utf8')
  const keyPem = await readFile(join(dir, 'key.pem'), 'utf8')
  const cert = new X509Certificate(certPem)
  t.equal(cert.subjectAltName, 'DNS:gym.lan, IP Address:192.168.1.5, IP Address:FD00:0:0:0:0:0:0:5')
  t.equal(cert.subject, 'CN=gym.lan\nO=hr-relay')
  t.equal(cert.issuer, cert.subject, 'self-signed')
  t.equal(cert.ca, true, 'its own CA, so that a phone can trust it as a root')
  t.equal(cert.checkIssued(cert), true)
  t.equal(cert.verify(cert.publicKey), true, 'signed by its own key')
  t.equal(cert.checkPrivateKey(createPrivateKey(keyPem)), true, 'the key matches the certificate')
  t.equal(cert.checkHost('gym.lan'), 'gym.lan')
  t.equal(cert.checkIP('192.168.1.5'), '192.168.1.5')
  t.equal(cert.checkHost('other.lan'), undefined)
  const from = cert.validFromDate.getTime()
  t.ok(from >= Math.floor(before / 1000) * 1000 && from <= Date.now(), 'valid from now')
  t.equal(cert.validToDate.getTime() - from, 30 * DAY, 'valid for --days')
  t.equal(createPrivateKey(keyPem).asymmetricKeyType, 'ec')
  t.equal((await stat(join(dir, 'key.pem'))).mode & 0o777, 0o600)
  t.equal((await stat(join(dir, 'cert.pem'))).mode & 0o777, 0o644)
  t.equal(r.stdout, `wrote ${join(dir, 'key.pem')} (private key, mode 0600: keep it secret) and ${join(dir, 'cert.pem')}
certificate for gym.lan, 192.168.1.5, fd00::5, valid until ${cert.validToDate.toISOString()}
SHA-256 fingerprint: ${cert.fingerprint256}

Add to the configuration file (hr-relay start --config FILE), then restart:
  "http": {
    "tls": {
      "cert_file": "${join(dir, 'cert.pem')}",
      "key_file": "${join(dir, 'key.pem')}"
    }
  },
  "mqtt": {
    "tls": {
      "port": 8883,
      "cert_file": "${join(dir, 'cert.pem')}",
      "key_file": "${join(dir, 'key.pem')}"
    }
  }

Install ${join(dir, 'cert.pem')} (not the key) on members' phones: docs/operator.md "TLS on the gym network".
`)
  t.notOk(r.stdout.includes(keyPem.split('\n')[1] as string), 'the key is not printed')

  // Not replaced without --force; nothing changed.
  const again = await runMain(['admin', 'tls', 'self-signed', '--hostname', 'gym.lan', '--data-dir', dir])
  t.equal(again.code, 1)
  t.equal(again.stderr, `hr-relay: ${join(dir, 'key.pem')} exists; pass --force to replace the key and certificate (clients that trust the old certificate must then install the new one)\n`)
  t.equal(await readFile(join(dir, 'key.pem'), 'utf8'), keyPem)
  t.equal(await readFile(join(dir, 'cert.pem'), 'utf8'), certPem)

  const forced = await runMain(['admin', 'tls', 'self-signed', '--hostname', 'box.lan', '--force', '--json', '--data-dir', dir])
  t.equal(forced.code, 0)
  const json = JSON.parse(forced.stdout)
  const replaced = new X509Certificate(await readFile(join(dir, 'cert.pem')))
  t.equal(json.fingerprint256, replaced.fingerprint256)
  t.not(json.fingerprint256, cert.fingerprint256, 'a new certificate')
  t.equal(replaced.subjectAltName, 'DNS:box.lan')
  t.equal(replaced.validToDate.getTime() - replaced.validFromDate.getTime(), 825 * DAY, 'the default is 825 days, the most phones accept')
  t.same(json.config, { http: { tls: { cert_file: join(dir, 'cert.pem'), key_file: join(dir, 'key.pem') } }, mqtt: { tls: { port: 8883, cert_file: join(dir, 'cert.pem'), key_file: join(dir, 'key.pem') } } })
  t.equal((await stat(join(dir, 'key.pem'))).mode & 0o777, 0o600)
})

t.test('refuses a bad command line with exit code 2, writing nothing', async t => {
  const dir = await tempDir(t)
  const cases: Array<[string[], string]> = [
    [[], '--hostname must be a DNS name (e.g. hr-relay.lan); addresses go in --ip'],
    [['--hostname', '192.168.1.5'], '--hostname must be a DNS name (e.g. hr-relay.lan); addresses go in --ip'],
    [['--hostname', 'bad_name'], '--hostname must be a DNS name (e.g. hr-relay.lan); addresses go in --ip'],
    [['--hostname', 'gym.lan', '--ip', '300.1.1.1'], '--ip 300.1.1.1 is not an IPv4 or IPv6 address'],
    [['--hostname', 'gym.lan', '--days', '0'], '--days must be a whole number from 1 to 825 (phones refuse server certificates valid for longer)'],
    [['--hostname', 'gym.lan', '--days', '826'], '--days must be a whole number from 1 to 825 (phones refuse server certificates valid for longer)']
  ]
  for (const [args, message] of cases) {
    const r = await runMain(['admin', 'tls', 'self-signed', ...args, '--data-dir', dir])
    t.equal(r.code, 2, args.join(' '))
    t.ok(r.stderr.startsWith(`hr-relay: ${message}`), r.stderr)
  }
  const other = await runMain(['admin', 'tls', 'acme', '--data-dir', dir])
  t.equal(other.code, 2)
  t.match(other.stderr, /^hr-relay: unknown admin command: tls acme\nusage: hr-relay admin tls self-signed --hostname NAME/)
  await t.rejects(stat(join(dir, 'key.pem')), { code: 'ENOENT' })
})

t.test('the admin CLI reaches a service that serves HTTPS, trusting only the certificate recorded in server.json', async t => {
  const dir = await tempDir(t)
  const cert = await makeCert(join(dir, 'cert'))
  const svc = await startTestService(t, { data_dir: join(dir, 'data'), http: { tls: { cert_file: cert.cert_file, key_file: cert.key_file } } })
  t.match(svc.url, /^https:/)
  const add = await runMain(['admin', 'user', 'add', 'dana', '--password', 'password123', '--data-dir', svc.dataDir, '--json'])
  t.equal(add.code, 0, add.stderr)
  t.equal(JSON.parse(add.stdout).username, 'dana')
  const list = await runMain(['admin', 'user', 'list', '--data-dir', svc.dataDir])
  t.equal(list.code, 0)
  t.match(list.stdout, /^dana\t[0-9a-f-]{36}\tpremium=none\n$/)

  // Another certificate on that port (or a changed record): the CLI does not send the token.
  const infoFile = join(svc.dataDir, 'server.json')
  const info = JSON.parse(await readFile(infoFile, 'utf8'))
  await writeFile(infoFile, JSON.stringify({ ...info, tls_fingerprint256: ((info.tls_fingerprint256 as string).startsWith('AA:') ? 'BB:' : 'AA:') + (info.tls_fingerprint256 as string).slice(3) }))
  const refused = await runMain(['admin', 'user', 'list', '--data-dir', svc.dataDir])
  t.equal(refused.code, 1)
  t.equal(refused.stderr, `hr-relay: cannot reach hr-relay at ${svc.url}: the certificate it shows (SHA-256 ${cert.fingerprint256}) is not the one recorded in server.json (is it running?)\n`)
})
