/** UTF-16 code unit buffers the views are built in, turned into strings natively. */
const utf16 = new TextDecoder("utf-16le")

export const codesToString = (codes: Uint16Array, length: number) => utf16.decode(codes.subarray(0, length))
