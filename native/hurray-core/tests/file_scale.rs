//! A container of 100,000 tiny tensors: the number of `read_at` calls made by open, by a
//! lookup and by a read stays bounded (docs/spec/hrryfile.md §4.2 Lookup by name): open reads the header
//! and the trailer (the index is over the 1 MiB eager threshold), a lookup reads at most
//! ceil(log2(n + 1)) entries plus one record, a read one range per buffer.

mod file_support;

use file_support::*;
use hurray_core::file::FileReaderOptions;
use hurray_core::{ElementType, FileReader, FileWriter, FileWriterOptions};

const N: u64 = 100_000;

fn name(i: u64) -> String {
    format!("t{:06}", (i * 7919) % N) // added out of order; the index sorts them
}

#[test]
fn hundred_thousand_tensors_bounded_reads() {
    let mut w = FileWriter::new(VecSink::new(), FileWriterOptions::default()).unwrap();
    for i in 0..N {
        let d = named(&name(i), ElementType::Uint8, vec![1]);
        w.add_tensor(&d, &[&[(i % 251) as u8]]).unwrap();
    }
    w.set_metadata("count", N.to_string().as_bytes()).unwrap();
    w.finish().unwrap();
    let sink = w.into_transport();
    // Small payloads are coalesced: far fewer write calls than tensors.
    assert!(sink.calls < N / 50, "{} write calls", sink.calls);
    let bytes = sink.bytes;

    let mut r = FileReader::open(VecSource::new(bytes), FileReaderOptions::default()).unwrap();
    assert_eq!(r.entry_count(), N);
    assert!(!r.is_index_loaded(), "the index is larger than the eager threshold");
    assert_eq!(r.read_calls(), 2, "open reads the header and the trailer");

    let probes = 64 - N.leading_zeros() as u64; // ceil(log2(N + 1)) = 17
    assert_eq!(probes, 17);
    let mut worst = 0;
    for k in [0u64, 1, 2, 777, 4242, 50_000, 99_998, 99_999] {
        let want = format!("t{k:06}");
        let before = r.read_calls();
        let e = r.find(want.as_bytes()).unwrap().expect("present");
        let used = r.read_calls() - before;
        assert!(used <= probes + 1, "lookup of {want} made {used} read_at calls");
        worst = worst.max(used);
        assert_eq!(e.name(), want);
        assert_eq!(e.index(), k, "sorted by name");
        let before = r.read_calls();
        let t = r.read_tensor(&e).unwrap();
        assert_eq!(r.read_calls() - before, 1);
        let added = (0..N).find(|&i| name(i) == want).unwrap();
        assert_eq!(t.buffers[0].as_slice(), &[(added % 251) as u8]);
    }
    assert!(worst >= probes - 3, "the search really probes the table ({worst})");
    for missing in ["t100000", "s", "u", "t0000005"] {
        let before = r.read_calls();
        assert!(r.find(missing.as_bytes()).unwrap().is_none());
        assert!(r.read_calls() - before <= probes);
    }
    let before = r.read_calls();
    r.entry(12_345).unwrap();
    assert_eq!(r.read_calls() - before, 2);
    let before = r.read_calls();
    assert_eq!(r.metadata_value("count").unwrap(), Some(N.to_string().as_bytes()));
    assert_eq!(r.read_calls() - before, 1, "metadata is read once, on first use");
    r.metadata().unwrap();
    assert_eq!(r.read_calls() - before, 1);
    let before = r.read_calls();
    r.verify().unwrap();
    // One range for the index, then the padding of the payload area in windows of at most
    // PADDING_CHUNK_BYTES, each covering many small gaps (not one read per gap); two
    // consecutive windows always advance by at least one chunk.
    let area = r.trailer().index_offset;
    let windows = 2 * area.div_ceil(hurray_core::file::PADDING_CHUNK_BYTES) + 1;
    let used = r.read_calls() - before;
    assert!(used <= 1 + windows, "verify made {used} read_at calls for a {area}-byte payload area");
}
