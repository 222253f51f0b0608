//! Byte layouts of HRRYFILE (docs/spec/hrryfile.md §1 File layout). Little-endian throughout.
//! Encoding here is total; decoding checks every field it can check locally (magic, checksum,
//! reserved bytes, limits) and leaves checks that need the file's geometry to the reader.

use crate::crc32c::crc32c;
use crate::error::{bail, Result};
use crate::{MAX_BUFFERS, MAX_NAME_BYTES};

/// Magic at byte 0 of every container.
pub const FILE_MAGIC: [u8; 8] = *b"HRRYFILE";
/// Container format version written and read by this build.
pub const FILE_VERSION: u16 = 1;
/// Header size in bytes: magic, version u16, flags u16, CRC32C u32 of bytes 0..12.
pub const HEADER_BYTES: u64 = 16;
/// Magic at the start of the trailer (the last [`TRAILER_BYTES`] bytes of the file).
pub const TRAILER_MAGIC: [u8; 8] = *b"HRRYTAIL";
/// Trailer size in bytes.
pub const TRAILER_BYTES: u64 = 72;
/// Size of one entry of the name-sorted entry table, in bytes.
pub const ENTRY_BYTES: u64 = 128;
/// Leading name bytes stored inline in an entry; longer names are compared in full only
/// when these bytes tie.
pub const NAME_PREFIX_BYTES: usize = 88;
/// Size of one buffer record (offset, length, CRC32C, flags), in bytes.
pub const BUFFER_RECORD_BYTES: u64 = 24;
/// The writer starts the index at a multiple of this; the reader requires a multiple of 8.
pub const INDEX_ALIGNMENT: u64 = 64;
/// Buffer record flag: the CRC32C field holds the payload's checksum.
pub const BUFFER_HAS_CRC: u32 = 1;
/// Most file-level metadata entries.
pub const MAX_FILE_METADATA_ENTRIES: u64 = 65_536;
/// Largest file-level metadata key, in UTF-8 bytes (at least 1).
pub const MAX_FILE_METADATA_KEY_BYTES: usize = 4096;
/// Largest file-level metadata value, in bytes (16 MiB).
pub const MAX_FILE_METADATA_VALUE_BYTES: u64 = 16 << 20;
/// Largest metadata block, in bytes (64 MiB).
pub const MAX_FILE_METADATA_BYTES: u64 = 64 << 20;

/// Smallest possible encoded descriptor (fixed part, rank 0, no buffers); used to reject
/// records too short to hold one before reading them.
pub(crate) const MIN_DESCRIPTOR_BYTES: u64 = 24;

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

pub(crate) fn encode_header() -> [u8; HEADER_BYTES as usize] {
    let mut h = [0u8; HEADER_BYTES as usize];
    h[0..8].copy_from_slice(&FILE_MAGIC);
    h[8..10].copy_from_slice(&FILE_VERSION.to_le_bytes());
    let c = crc32c(&h[0..12]);
    h[12..16].copy_from_slice(&c.to_le_bytes());
    h
}

pub(crate) fn check_header(h: &[u8]) -> Result<()> {
    if h[0..8] != FILE_MAGIC {
        bail!(InvalidMagic, "not an HRRYFILE container (bad header magic)");
    }
    if crc32c(&h[0..12]) != u32_at(h, 12) {
        bail!(Corrupt, "container header checksum mismatch");
    }
    let version = u16_at(h, 8);
    if version != FILE_VERSION {
        bail!(VersionMismatch, "container version {version} (this build reads {FILE_VERSION})");
    }
    let flags = u16_at(h, 10);
    if flags != 0 {
        bail!(Unsupported, "unknown container header flags {flags:#06x}");
    }
    Ok(())
}

/// The fixed-size trailer at the very end of a container: where the index and the metadata
/// block are, how many entries the index has, and their checksums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trailer {
    /// Absolute offset of the index (the entry table), a multiple of 8.
    pub index_offset: u64,
    /// Index length in bytes: `entry_count * ENTRY_BYTES` of table plus the records.
    pub index_length: u64,
    /// Number of tensors.
    pub entry_count: u64,
    /// Absolute offset of the metadata block; equals `index_offset + index_length`.
    pub metadata_offset: u64,
    /// Metadata block length in bytes; the block ends where the trailer starts.
    pub metadata_length: u64,
    /// CRC32C of the index bytes.
    pub index_crc: u32,
    /// CRC32C of the metadata block.
    pub metadata_crc: u32,
}

impl Trailer {
    /// The 72-byte encoding (docs/spec/hrryfile.md §1.6 Trailer).
    pub fn encode(&self) -> [u8; TRAILER_BYTES as usize] {
        let mut t = [0u8; TRAILER_BYTES as usize];
        t[0..8].copy_from_slice(&TRAILER_MAGIC);
        t[8..10].copy_from_slice(&FILE_VERSION.to_le_bytes());
        t[16..24].copy_from_slice(&self.index_offset.to_le_bytes());
        t[24..32].copy_from_slice(&self.index_length.to_le_bytes());
        t[32..40].copy_from_slice(&self.entry_count.to_le_bytes());
        t[40..48].copy_from_slice(&self.metadata_offset.to_le_bytes());
        t[48..56].copy_from_slice(&self.metadata_length.to_le_bytes());
        t[56..60].copy_from_slice(&self.index_crc.to_le_bytes());
        t[60..64].copy_from_slice(&self.metadata_crc.to_le_bytes());
        let c = crc32c(&t[0..68]);
        t[68..72].copy_from_slice(&c.to_le_bytes());
        t
    }

    /// Decodes a trailer, checking magic, checksum, version and reserved fields (not yet the
    /// offsets: that needs the file size).
    ///
    /// Errors: `Corrupt` (length, checksum, reserved bytes), `InvalidMagic`,
    /// `VersionMismatch`, `Unsupported` (flags).
    pub fn decode(t: &[u8]) -> Result<Self> {
        if t.len() != TRAILER_BYTES as usize {
            bail!(Corrupt, "a trailer is {TRAILER_BYTES} bytes, got {}", t.len());
        }
        if t[0..8] != TRAILER_MAGIC {
            bail!(InvalidMagic, "not an HRRYFILE container, or an unfinished one (bad trailer magic)");
        }
        if crc32c(&t[0..68]) != u32_at(t, 68) {
            bail!(Corrupt, "container trailer checksum mismatch");
        }
        let version = u16_at(t, 8);
        if version != FILE_VERSION {
            bail!(VersionMismatch, "container version {version} in the trailer (this build reads {FILE_VERSION})");
        }
        let flags = u16_at(t, 10);
        if flags != 0 {
            bail!(Unsupported, "unknown trailer flags {flags:#06x}");
        }
        if u32_at(t, 12) != 0 || u32_at(t, 64) != 0 {
            bail!(Corrupt, "reserved trailer bytes are not zero");
        }
        Ok(Trailer {
            index_offset: u64_at(t, 16),
            index_length: u64_at(t, 24),
            entry_count: u64_at(t, 32),
            metadata_offset: u64_at(t, 40),
            metadata_length: u64_at(t, 48),
            index_crc: u32_at(t, 56),
            metadata_crc: u32_at(t, 60),
        })
    }
}

/// One fixed-size entry of the name-sorted entry table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RawEntry {
    pub record_offset: u64,
    pub record_length: u64,
    pub name_offset: u64,
    pub name_length: u32,
    pub buffer_count: u32,
    pub record_crc: u32,
    pub prefix: [u8; NAME_PREFIX_BYTES],
}

impl RawEntry {
    pub fn encode(&self) -> [u8; ENTRY_BYTES as usize] {
        let mut e = [0u8; ENTRY_BYTES as usize];
        e[0..8].copy_from_slice(&self.record_offset.to_le_bytes());
        e[8..16].copy_from_slice(&self.record_length.to_le_bytes());
        e[16..24].copy_from_slice(&self.name_offset.to_le_bytes());
        e[24..28].copy_from_slice(&self.name_length.to_le_bytes());
        e[28..32].copy_from_slice(&self.buffer_count.to_le_bytes());
        e[32..36].copy_from_slice(&self.record_crc.to_le_bytes());
        e[36..124].copy_from_slice(&self.prefix);
        let c = crc32c(&e[0..124]);
        e[124..128].copy_from_slice(&c.to_le_bytes());
        e
    }

    /// Decodes entry `index` and checks what it can alone: checksum (unless `covered`: the
    /// caller already checked a checksum over these bytes), counts, prefix padding.
    pub fn decode(e: &[u8], index: u64, covered: bool) -> Result<Self> {
        if !covered && crc32c(&e[0..124]) != u32_at(e, 124) {
            bail!(Corrupt, "index entry {index} checksum mismatch");
        }
        let mut prefix = [0u8; NAME_PREFIX_BYTES];
        prefix.copy_from_slice(&e[36..124]);
        let r = RawEntry {
            record_offset: u64_at(e, 0),
            record_length: u64_at(e, 8),
            name_offset: u64_at(e, 16),
            name_length: u32_at(e, 24),
            buffer_count: u32_at(e, 28),
            record_crc: u32_at(e, 32),
            prefix,
        };
        if r.name_length == 0 || r.name_length as usize > MAX_NAME_BYTES {
            bail!(Corrupt, "index entry {index} has a name of {} bytes (1..={MAX_NAME_BYTES} allowed)", r.name_length);
        }
        if r.buffer_count as usize > MAX_BUFFERS {
            bail!(Corrupt, "index entry {index} has {} buffers (at most {MAX_BUFFERS})", r.buffer_count);
        }
        let inline = r.inline_len();
        if r.prefix[inline..].iter().any(|&b| b != 0) {
            bail!(Corrupt, "index entry {index}: name prefix padding is not zero");
        }
        Ok(r)
    }

    /// Bytes of the name held in `prefix`.
    pub fn inline_len(&self) -> usize {
        (self.name_length as usize).min(NAME_PREFIX_BYTES)
    }

    /// The whole name when it fits the prefix.
    pub fn inline_name(&self) -> Option<&[u8]> {
        if self.name_length as usize <= NAME_PREFIX_BYTES {
            Some(&self.prefix[..self.name_length as usize])
        } else {
            None
        }
    }
}

/// One buffer's place in the file as a record stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BufferRecord {
    pub offset: u64,
    pub length: u64,
    pub crc: u32,
    pub flags: u32,
}

impl BufferRecord {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.length.to_le_bytes());
        out.extend_from_slice(&self.crc.to_le_bytes());
        out.extend_from_slice(&self.flags.to_le_bytes());
    }

    pub fn decode(b: &[u8], entry: u64, i: usize) -> Result<Self> {
        let r = BufferRecord { offset: u64_at(b, 0), length: u64_at(b, 8), crc: u32_at(b, 16), flags: u32_at(b, 20) };
        if r.flags & !BUFFER_HAS_CRC != 0 {
            bail!(Corrupt, "entry {entry} buffer {i}: unknown flags {:#x}", r.flags);
        }
        if r.flags & BUFFER_HAS_CRC == 0 && r.crc != 0 {
            bail!(Corrupt, "entry {entry} buffer {i}: a checksum without the has-checksum flag");
        }
        Ok(r)
    }
}

/// Encodes the metadata block: count u64, then per entry key length u32, value length u64,
/// key bytes, value bytes; keys strictly increasing in byte order.
pub(crate) fn encode_metadata<'a>(entries: impl ExactSizeIterator<Item = (&'a str, &'a [u8])>) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    for (k, v) in entries {
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(&(v.len() as u64).to_le_bytes());
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(v);
    }
    out
}

/// Decodes a whole metadata block (its checksum already checked). Never allocates more than
/// `b.len()` bytes of keys and values.
pub(crate) fn decode_metadata(b: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    if b.len() < 8 {
        bail!(Corrupt, "metadata block of {} bytes is shorter than its count", b.len());
    }
    let count = u64_at(b, 0);
    if count > MAX_FILE_METADATA_ENTRIES {
        bail!(LimitExceeded, "{count} metadata entries exceed {MAX_FILE_METADATA_ENTRIES}");
    }
    // Each entry takes at least 13 bytes, so a count the block cannot hold is refused before
    // reserving space for it.
    if count > (b.len() as u64 - 8) / 13 {
        bail!(Corrupt, "metadata block of {} bytes cannot hold {count} entries", b.len());
    }
    let mut out: Vec<(String, Vec<u8>)> = Vec::with_capacity(count as usize);
    let mut pos = 8usize;
    for i in 0..count {
        if b.len() - pos < 12 {
            bail!(Corrupt, "metadata entry {i} is truncated");
        }
        let kl = u32_at(b, pos) as usize;
        let vl = u64_at(b, pos + 4);
        pos += 12;
        if kl == 0 || kl > MAX_FILE_METADATA_KEY_BYTES {
            bail!(Corrupt, "metadata entry {i} has a key of {kl} bytes (1..={MAX_FILE_METADATA_KEY_BYTES} allowed)");
        }
        if vl > MAX_FILE_METADATA_VALUE_BYTES {
            bail!(
                LimitExceeded,
                "metadata entry {i} has a value of {vl} bytes (at most {MAX_FILE_METADATA_VALUE_BYTES})"
            );
        }
        let vl = vl as usize;
        if b.len() - pos < kl + vl {
            bail!(Corrupt, "metadata entry {i} reaches past the block");
        }
        let key = std::str::from_utf8(&b[pos..pos + kl])
            .map_err(|_| crate::error::err!(Corrupt, "metadata key {i} is not UTF-8"))?
            .to_string();
        let value = b[pos + kl..pos + kl + vl].to_vec();
        pos += kl + vl;
        if let Some((prev, _)) = out.last() {
            match prev.as_bytes().cmp(key.as_bytes()) {
                std::cmp::Ordering::Less => {}
                std::cmp::Ordering::Equal => bail!(DuplicateName, "metadata key {key:?} appears twice"),
                std::cmp::Ordering::Greater => bail!(Corrupt, "metadata keys are not sorted at entry {i}"),
            }
        }
        out.push((key, value));
    }
    if pos != b.len() {
        bail!(Corrupt, "{} trailing bytes after the metadata entries", b.len() - pos);
    }
    Ok(out)
}

/// Rounds `x` up to a multiple of `align` (a power of two); `None` on overflow.
pub(crate) fn align_up(x: u64, align: u64) -> Option<u64> {
    debug_assert!(align.is_power_of_two());
    x.checked_add(align - 1).map(|v| v & !(align - 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn header_round_trip_and_rejections() {
        let h = encode_header();
        check_header(&h).unwrap();
        let mut bad = h;
        bad[0] = b'X';
        assert_eq!(check_header(&bad).unwrap_err().kind(), ErrorKind::InvalidMagic);
        let mut bad = h;
        bad[9] = 1;
        assert_eq!(check_header(&bad).unwrap_err().kind(), ErrorKind::Corrupt);
    }

    #[test]
    fn trailer_round_trip() {
        let t = Trailer {
            index_offset: 1 << 40,
            index_length: 7,
            entry_count: 3,
            metadata_offset: (1 << 40) + 7,
            metadata_length: 8,
            index_crc: 0xDEAD_BEEF,
            metadata_crc: 1,
        };
        let b = t.encode();
        assert_eq!(Trailer::decode(&b).unwrap(), t);
        let mut bad = b;
        bad[20] ^= 1;
        assert_eq!(Trailer::decode(&bad).unwrap_err().kind(), ErrorKind::Corrupt);
    }

    #[test]
    fn entry_round_trip_and_prefix_padding() {
        let mut prefix = [0u8; NAME_PREFIX_BYTES];
        prefix[..3].copy_from_slice(b"abc");
        let e = RawEntry {
            record_offset: 5,
            record_length: 6,
            name_offset: 7,
            name_length: 3,
            buffer_count: 1,
            record_crc: 9,
            prefix,
        };
        let b = e.encode();
        assert_eq!(RawEntry::decode(&b, 0, false).unwrap(), e);
        assert_eq!(e.inline_name(), Some(&b"abc"[..]));
        let mut bad = e.clone();
        bad.prefix[10] = 1;
        assert_eq!(RawEntry::decode(&bad.encode(), 0, false).unwrap_err().kind(), ErrorKind::Corrupt);
        let mut flipped = b;
        flipped[3] ^= 1;
        assert_eq!(RawEntry::decode(&flipped, 0, false).unwrap_err().kind(), ErrorKind::Corrupt);
        assert!(RawEntry::decode(&flipped, 0, true).is_ok());
    }

    #[test]
    fn metadata_round_trip_and_hostile_counts() {
        let kv = [("a", &b"1"[..]), ("b", &b""[..])];
        let b = encode_metadata(kv.iter().copied());
        let d = decode_metadata(&b).unwrap();
        assert_eq!(d, vec![("a".to_string(), b"1".to_vec()), ("b".to_string(), vec![])]);
        let mut huge = b.clone();
        huge[0..8].copy_from_slice(&60_000u64.to_le_bytes());
        assert_eq!(decode_metadata(&huge).unwrap_err().kind(), ErrorKind::Corrupt);
        let unsorted = encode_metadata([("b", &b""[..]), ("a", &b""[..])].iter().copied());
        assert_eq!(decode_metadata(&unsorted).unwrap_err().kind(), ErrorKind::Corrupt);
        let dup = encode_metadata([("a", &b""[..]), ("a", &b""[..])].iter().copied());
        assert_eq!(decode_metadata(&dup).unwrap_err().kind(), ErrorKind::DuplicateName);
    }

    #[test]
    fn align_up_edges() {
        assert_eq!(align_up(0, 64), Some(0));
        assert_eq!(align_up(1, 64), Some(64));
        assert_eq!(align_up(64, 64), Some(64));
        assert_eq!(align_up(u64::MAX - 3, 64), None);
    }
}
