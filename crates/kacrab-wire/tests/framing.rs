//! FrameDecoder: arbitrary split points, bad prefixes, limits.

use bytes::Bytes;
use kacrab_wire::{FrameDecoder, WireError, DEFAULT_MAX_FRAME_SIZE};
use proptest::collection::vec;
use proptest::prelude::*;

fn framed(payloads: &[Vec<u8>]) -> Vec<u8> {
    payloads
        .iter()
        .flat_map(|p| {
            (p.len() as i32)
                .to_be_bytes()
                .into_iter()
                .chain(p.iter().copied())
        })
        .collect()
}

fn drain(d: &mut FrameDecoder, out: &mut Vec<Bytes>) {
    while let Some(frame) = d.decode().unwrap() {
        out.push(frame);
    }
}

proptest! {
    #[test]
    fn frames_survive_any_split(
        payloads in vec(vec(any::<u8>(), 0..300), 0..8),
        cuts in vec(any::<prop::sample::Index>(), 0..20),
    ) {
        let stream = framed(&payloads);
        let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(stream.len() + 1)).collect();
        cuts.push(0);
        cuts.push(stream.len());
        cuts.sort_unstable();
        let mut d = FrameDecoder::new();
        let mut out = Vec::new();
        for w in cuts.windows(2) {
            d.extend(&stream[w[0]..w[1]]);
            drain(&mut d, &mut out);
        }
        prop_assert_eq!(out, payloads.into_iter().map(Bytes::from).collect::<Vec<_>>());
        prop_assert_eq!(d.buffered(), 0);
    }
}

#[test]
fn byte_by_byte() {
    let payloads = vec![b"hello".to_vec(), vec![], vec![0xff; 1000], b"x".to_vec()];
    let stream = framed(&payloads);
    let mut d = FrameDecoder::new();
    let mut out = Vec::new();
    for b in &stream {
        d.extend(std::slice::from_ref(b));
        drain(&mut d, &mut out);
    }
    assert_eq!(
        out,
        payloads.into_iter().map(Bytes::from).collect::<Vec<_>>()
    );
}

#[test]
fn negative_length_is_an_error_as_soon_as_the_prefix_is_in() {
    let mut d = FrameDecoder::new();
    d.extend(&[0xff, 0xff, 0xff]);
    assert!(d.decode().unwrap().is_none());
    d.extend(&[0xfe]);
    assert!(matches!(d.decode(), Err(WireError::NegativeLength(-2))));
    // and stays an error: the stream is out of step
    assert!(matches!(d.decode(), Err(WireError::NegativeLength(-2))));
    let mut d = FrameDecoder::new();
    d.extend(&i32::MIN.to_be_bytes());
    assert!(matches!(
        d.decode(),
        Err(WireError::NegativeLength(i32::MIN))
    ));
}

#[test]
fn oversized_length_is_an_error_before_the_bytes_arrive() {
    let mut d = FrameDecoder::new();
    d.extend(&i32::MAX.to_be_bytes());
    match d.decode() {
        Err(WireError::FrameTooLarge { size, max }) => {
            assert_eq!((size, max), (i32::MAX as usize, DEFAULT_MAX_FRAME_SIZE));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(DEFAULT_MAX_FRAME_SIZE, 100 * 1024 * 1024);
}

#[test]
fn the_limit_is_inclusive_and_configurable() {
    let mut d = FrameDecoder::with_max_frame_size(8);
    assert_eq!(d.max_frame_size(), 8);
    d.extend(&framed(&[vec![1; 8]]));
    assert_eq!(d.decode().unwrap().unwrap().len(), 8);
    d.extend(&9i32.to_be_bytes());
    assert!(matches!(
        d.decode(),
        Err(WireError::FrameTooLarge { size: 9, max: 8 })
    ));
}

#[test]
fn a_frame_waits_for_all_its_bytes() {
    let mut d = FrameDecoder::new();
    d.extend(&[0, 0, 0, 4, 1, 2, 3]);
    assert!(d.decode().unwrap().is_none());
    assert_eq!(d.buffered(), 7);
    d.extend(&[4, 0, 0]);
    assert_eq!(
        d.decode().unwrap().unwrap(),
        Bytes::from_static(&[1, 2, 3, 4])
    );
    assert!(d.decode().unwrap().is_none());
    assert_eq!(d.buffered(), 2);
}

#[test]
fn reading_into_the_buffer_directly() {
    let mut d = FrameDecoder::default();
    d.buffer_mut().extend_from_slice(&framed(&[b"ab".to_vec()]));
    assert_eq!(d.decode().unwrap().unwrap(), Bytes::from_static(b"ab"));
}
