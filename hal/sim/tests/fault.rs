//! The software NPU's support for the sanitizer and fault containment: hidden pages
//! (`Sim::set_hidden`) keep their bytes, refuse DMA while hidden, and unback as usual; the
//! window layout is chosen once per process.

use hal::layout::{device_window_base, layout_shift, set_layout_shift};
use hal::{
    BackRequest, CopyEngine, DeviceAddr, DeviceId, ErrorKind, MemAttr, MemoryBacking, PageSize, VaRange,
};
use hal_sim::{Sim, SimConfig};

const D0: DeviceId = DeviceId(0);
const MIB: u64 = 1 << 20;

fn config(name: &str) -> SimConfig {
    SimConfig {
        instance: format!("faulttest-{}-{name}", std::process::id()),
        hbm_bytes: 256 * MIB,
        huge_budget_bytes: 64 * MIB,
        giant_budget_bytes: 0,
        ..SimConfig::default()
    }
}

fn range(start: u64, len: u64) -> VaRange {
    VaRange::try_new(DeviceAddr(start), len).expect("valid range")
}

#[test]
fn hidden_pages_keep_their_bytes_refuse_dma_and_unback_as_usual() {
    let sim = Sim::new(config("hidden")).expect("start the software NPU");
    sim.open_device(D0).expect("open device 0");
    let a = device_window_base(0) + 2 * MIB;
    for page in [PageSize::Huge, PageSize::Normal] {
        sim.back(D0, &BackRequest { range: range(a, 2 * MIB), page_size: page, attrs: MemAttr::CACHED })
            .unwrap();
        let pat: Vec<u8> = (0..3 * 4096u32).map(|i| (i % 251) as u8).collect();
        sim.copy_to_device(D0, DeviceAddr(a + 4096), &pat).unwrap();
        // Hide the middle page of the three.
        sim.set_hidden(D0, a + 2 * 4096, 4096, true).unwrap();
        let mut buf = vec![0u8; 3 * 4096];
        let e =
            sim.copy_from_device(D0, &mut buf, DeviceAddr(a + 4096)).expect_err("a hidden page refuses DMA");
        assert_eq!(e.kind(), ErrorKind::InvalidHandle);
        // Its neighbours still work.
        let mut one = vec![0u8; 4096];
        sim.copy_from_device(D0, &mut one, DeviceAddr(a + 4096)).unwrap();
        assert_eq!(one, pat[..4096]);
        sim.copy_from_device(D0, &mut one, DeviceAddr(a + 3 * 4096)).unwrap();
        assert_eq!(one, pat[2 * 4096..]);
        // Shown again, it kept its bytes.
        sim.set_hidden(D0, a + 2 * 4096, 4096, false).unwrap();
        sim.copy_from_device(D0, &mut buf, DeviceAddr(a + 4096)).unwrap();
        assert_eq!(buf, pat);
        // Hidden pages do not stop an unback of the whole range.
        sim.set_hidden(D0, a, 2 * 4096, true).unwrap();
        sim.unback(D0, range(a, 2 * MIB)).unwrap();
        // Unbacked memory cannot be hidden.
        let e = sim.set_hidden(D0, a, 4096, true).expect_err("nothing is mapped there");
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    }
    // Not whole pages.
    assert_eq!(
        sim.set_hidden(D0, a + 1, 4096, true).expect_err("unaligned").kind(),
        ErrorKind::InvalidArgument
    );
    // The layout was settled when the NPU started, and cannot change afterwards.
    let s = layout_shift();
    assert_eq!(set_layout_shift(s), Ok(()));
    assert_eq!(set_layout_shift(s + hal::layout::LAYOUT_STEP), Err(s));
}
