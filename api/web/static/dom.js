// The element helper of the room display's scripts (room.js, room-class.js).

/** A new element with a class name and a text, each optional. */
export function el (tag, cls, text) {
  const e = document.createElement(tag)
  if (cls) e.className = cls
  if (text !== undefined) e.textContent = text
  return e
}
