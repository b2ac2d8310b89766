// A WebSocket that reconnects by itself with exponential backoff (1 s doubling
// to 10 s, with jitter) and reports its state: 'connecting', 'waiting' (open,
// no reading yet), 'live', 'no-signal' (open, nothing for staleMs),
// 'reconnecting', 'gone' (stillValid() said the capability was revoked; no
// more retries). onMessage returns true when the message was a reading.
export function openLive (url, { onMessage, onState, onOpen, stillValid, staleMs = 5000, minDelay = 1000, maxDelay = 10000 }) {
  let ws
  let delay = minDelay
  let retryTimer
  let staleTimer
  let stopped = false
  const arm = () => {
    clearTimeout(staleTimer)
    if (staleMs > 0) staleTimer = setTimeout(() => onState('no-signal'), staleMs)
  }
  const connect = () => {
    onState('connecting')
    ws = new WebSocket(url)
    ws.addEventListener('open', () => {
      delay = minDelay
      onState('waiting')
      arm()
      if (onOpen) onOpen()
    })
    ws.addEventListener('message', ev => {
      let msg
      try { msg = JSON.parse(ev.data) } catch { return }
      if (onMessage(msg) === true) { onState('live'); arm() }
    })
    let opened = false
    ws.addEventListener('open', () => { opened = true })
    ws.addEventListener('close', () => {
      clearTimeout(staleTimer)
      ws = undefined
      if (stopped) return
      onState('reconnecting')
      const wait = delay + Math.floor(Math.random() * 250)
      delay = Math.min(delay * 2, maxDelay)
      const retry = () => { if (!stopped) retryTimer = setTimeout(connect, wait) }
      // A refused handshake may mean the capability was revoked: ask before retrying.
      if (opened || !stillValid) { retry(); return }
      stillValid().then(valid => {
        if (valid) { retry(); return }
        stopped = true
        onState('gone')
      }, retry)
    })
  }
  connect()
  return {
    close () {
      stopped = true
      clearTimeout(retryTimer)
      clearTimeout(staleTimer)
      if (ws) ws.close()
    }
  }
}

/** ws:// or wss:// URL of a path on this origin. */
export function wsUrl (path) {
  const u = new URL(path, window.location.href)
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:'
  return u.toString()
}
