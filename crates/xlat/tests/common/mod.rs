pub mod tlb_ref;
