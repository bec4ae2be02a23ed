//! C export of the sanitizer's count of `acl/acl_sim.h`: `aclrsSanitizerFindings` (the work is
//! in [`crate::sanitize`]).

export! {
    /// `uint64_t aclrsSanitizerFindings(void);`
    pub fn aclrsSanitizerFindings() -> u64 = 0, |cx| {
        Ok(crate::sanitize::report::findings())
    }
}
