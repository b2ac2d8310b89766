// The bpm overlay: renders the widget configuration embedded in the page and
// follows the token-less widget stream (the widget id in the URL is the capability).
import { openLive, wsUrl } from './live.js'
import { normalizeConfig, colorFor, beatSeconds, bpmOf } from './widget-logic.js'

const root = document.getElementById('widget')
const bpmEl = document.getElementById('bpm')
const statusEl = document.getElementById('status')
const heart = document.getElementById('heart')
const widgetId = root.dataset.widgetId
const cfg = normalizeConfig(JSON.parse(document.getElementById('widget-config').textContent), c => CSS.supports('color', c))

if (cfg.font !== null) root.style.fontFamily = `${JSON.stringify(cfg.font)}, system-ui, sans-serif`
if (!cfg.heartEnabled) heart.setAttribute('hidden', '')
heart.style.fill = cfg.heartColor
bpmEl.style.color = cfg.textColor

const LABELS = { connecting: 'connecting…', waiting: 'waiting for heart rate…', live: '', 'no-signal': 'no signal', reconnecting: 'reconnecting…', gone: 'widget revoked' }

function show (state) {
  root.dataset.state = state
  statusEl.textContent = LABELS[state] ?? ''
  if (state !== 'live') bpmEl.textContent = '--'
  if (state !== 'live') bpmEl.style.color = cfg.textColor
}

openLive(wsUrl(`/widgets/${encodeURIComponent(widgetId)}/stream`), {
  staleMs: 5000,
  onState: show,
  // The page answers 404 once the owner revoked the widget.
  stillValid: async () => (await fetch(window.location.href, { method: 'HEAD', cache: 'no-store' })).status !== 404,
  onMessage (msg) {
    const bpm = bpmOf(msg)
    if (bpm === null) return false
    bpmEl.textContent = String(bpm)
    bpmEl.style.color = colorFor(bpm, cfg.ranges, cfg.textColor)
    root.style.setProperty('--beat', `${beatSeconds(bpm)}s`)
    return true
  }
})
