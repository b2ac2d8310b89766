// placeholder
export const blePath = { name: "ble-path", reference: "x", async run () { throw new Error("not yet") } }
