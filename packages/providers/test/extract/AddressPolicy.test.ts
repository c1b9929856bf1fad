import { assert, describe, it } from "@effect/vitest"
import {
  addressBlockReason,
  formatIPv4,
  hostnameBlockReason,
  isPrivateAddress,
  literalAddress,
  parseIPv4,
  parseIPv6
} from "../../src/extract/addressPolicy.js"

describe("addressPolicy", () => {
  it("parses IPv4 in decimal, octal, hex and shortened forms to the same address", () => {
    const loopback = parseIPv4("127.0.0.1")
    assert.strictEqual(loopback, 2130706433)
    for (const form of ["2130706433", "0177.0.0.1", "0x7f.0.0.1", "0x7f000001", "127.1", "127.0.1", "0177.1"]) {
      assert.strictEqual(parseIPv4(form), loopback, form)
    }
    assert.strictEqual(formatIPv4(2130706433), "127.0.0.1")
  })

  it("rejects text that is not an IPv4 address", () => {
    for (const text of ["1.2.3.4.5", "256.1.1.1", "08.1.1.1", "example.com", "", "1..2", "4294967296"]) {
      assert.isUndefined(parseIPv4(text), text)
    }
  })

  it("parses IPv6 with compression, brackets, zone ids and IPv4 tails", () => {
    assert.deepStrictEqual(parseIPv6("::1"), [0, 0, 0, 0, 0, 0, 0, 1])
    assert.deepStrictEqual(parseIPv6("[fe80::1%eth0]"), [0xfe80, 0, 0, 0, 0, 0, 0, 1])
    assert.deepStrictEqual(parseIPv6("::ffff:127.0.0.1"), [0, 0, 0, 0, 0, 0xffff, 0x7f00, 1])
    assert.deepStrictEqual(parseIPv6("::127.0.0.1"), [0, 0, 0, 0, 0, 0, 0x7f00, 1])
    assert.deepStrictEqual(parseIPv6("1:2:3:4:5:6:1.2.3.4"), [1, 2, 3, 4, 5, 6, 0x102, 0x304])
    assert.deepStrictEqual(parseIPv6("2001:db8::"), [0x2001, 0xdb8, 0, 0, 0, 0, 0, 0])
    for (const text of ["1:2:3", ":::1", "1::2::3", "12345::1", "1:2:3:4:5:6:7:8:9", "::1.2.3", "127.0.0.1"]) {
      assert.isUndefined(parseIPv6(text), text)
    }
  })

  it("refuses loopback, private, link-local, CGNAT, multicast, unspecified and broadcast IPv4", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["127.0.0.1", "loopback"],
      ["127.255.255.254", "loopback"],
      ["10.1.2.3", "private"],
      ["172.16.0.1", "private"],
      ["172.31.255.255", "private"],
      ["192.168.0.10", "private"],
      ["169.254.10.10", "link-local"],
      ["100.64.0.1", "carrier-grade NAT"],
      ["100.127.255.255", "carrier-grade NAT"],
      ["224.0.0.251", "multicast"],
      ["0.0.0.0", "unspecified"],
      ["255.255.255.255", "broadcast"],
      ["169.254.169.254", "metadata"]
    ]
    for (const [address, kind] of cases) {
      const reason = addressBlockReason(address)
      assert.isDefined(reason, address)
      assert.include(reason ?? "", kind, address)
    }
  })

  it("refuses the same addresses written in decimal, octal and hex", () => {
    for (const form of ["2130706433", "0177.0.0.1", "0x7f.1", "012.0.0.1", "0xa9.0xfe.0xa9.0xfe", "3232235777"]) {
      assert.isTrue(isPrivateAddress(form), form)
    }
  })

  it("refuses IPv6 loopback, unspecified, link-local, unique-local, multicast and metadata", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["::1", "loopback"],
      ["::", "unspecified"],
      ["fe80::1", "link-local"],
      ["febf:ffff::1", "link-local"],
      ["fc00::1", "unique-local"],
      ["fdff::1", "unique-local"],
      ["ff02::1", "multicast"],
      ["fd00:ec2::254", "metadata"]
    ]
    for (const [address, kind] of cases) {
      assert.include(addressBlockReason(address) ?? "", kind, address)
    }
  })

  it("judges IPv6 addresses that embed IPv4 (mapped, NAT64, 6to4) by the IPv4 address", () => {
    assert.include(addressBlockReason("::ffff:127.0.0.1") ?? "", "loopback")
    assert.include(addressBlockReason("::ffff:7f00:1") ?? "", "loopback")
    assert.include(addressBlockReason("::ffff:a9fe:a9fe") ?? "", "metadata")
    assert.include(addressBlockReason("64:ff9b::10.0.0.1") ?? "", "private")
    assert.include(addressBlockReason("2002:c0a8:0101::1") ?? "", "private")
    assert.isUndefined(addressBlockReason("::ffff:8.8.8.8"))
    assert.isUndefined(addressBlockReason("64:ff9b::808:808"))
  })

  it("allows public addresses", () => {
    for (const address of ["8.8.8.8", "1.1.1.1", "93.184.216.34", "172.32.0.1", "100.128.0.1", "2606:4700::1111"]) {
      assert.isFalse(isPrivateAddress(address), address)
    }
  })

  it("refuses text that is not an address, so unresolved names never pass", () => {
    assert.isTrue(isPrivateAddress("example.com"))
  })

  it("refuses metadata and localhost names before any lookup, with or without a trailing dot", () => {
    assert.include(hostnameBlockReason("metadata.google.internal") ?? "", "metadata")
    assert.include(hostnameBlockReason("METADATA.google.internal.") ?? "", "metadata")
    assert.include(hostnameBlockReason("localhost") ?? "", "loopback")
    assert.include(hostnameBlockReason("app.localhost") ?? "", "loopback")
    assert.isUndefined(hostnameBlockReason("example.com"))
  })

  it("recognises literal addresses in any spelling and leaves names alone", () => {
    assert.deepStrictEqual(literalAddress("0x7f.1"), { address: "127.0.0.1", family: 4 })
    assert.deepStrictEqual(literalAddress("[::ffff:7f00:1]"), { address: "0:0:0:0:0:ffff:7f00:1", family: 6 })
    assert.isUndefined(literalAddress("example.com"))
  })
})
