//! CRC-32C (Castagnoli), the checksum of a v2 record batch (Kafka's `Crc32C`, over the
//! attributes to the end of the batch).
//!
//! With the `std` feature (the default), the `crc32c` crate: the SSE 4.2 or ARMv8 CRC
//! instructions where the CPU has them (detected at run time, which needs `std`),
//! software otherwise. Without it, `crc`'s table-driven `CRC_32_ISCSI`: the same
//! checksum (polynomial 0x1edc6f41, reflected, initial and final XOR 0xffffffff), with
//! neither `std` nor an allocator, for `no_std` targets. The two are compared on random
//! input in the record tests, where both are compiled.

/// CRC-32C of `data`, accelerated.
#[cfg(feature = "std")]
pub(crate) fn crc32c(data: &[u8]) -> u32 {
    let crc = ::crc32c::crc32c(data);
    // The core's unit tests compute every CRC both ways, so each record test (which
    // cargo builds with `std`, the dev-dependencies asking for it) checks the `no_std`
    // path's bytes too.
    #[cfg(test)]
    assert_eq!(crc, portable(data), "the two CRC-32C paths disagree");
    crc
}

/// CRC-32C of `data`, portable.
#[cfg(not(feature = "std"))]
pub(crate) fn crc32c(data: &[u8]) -> u32 {
    portable(data)
}

/// The `no_std` CRC-32C, compiled in tests too so they can compare it with the
/// accelerated one.
#[cfg(any(test, not(feature = "std")))]
pub(crate) fn portable(data: &[u8]) -> u32 {
    const CASTAGNOLI: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);
    CASTAGNOLI.checksum(data)
}
