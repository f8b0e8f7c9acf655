// Package evidence writes a measurement's evidence bundle (a zip file) and
// checks one offline, with no server (docs/ledger.md, Evidence bundle). It
// gathers a bundle (Gather) from what the domain lets its reader see.
//
// A bundle holds measurement.json (the measurement as its reader saw it),
// one file per action under actions/ and one per other ledger entry of the
// measurement under leaves/ (each the leaf's data with its inclusion
// proof), audit-events.json (the audit events of its process's definition,
// with their proofs), the documents (documents/ID.pdf) and filled
// workbooks (workbooks/ID.xlsx) its reader may read, checkpoint.txt (the
// signed checkpoint the proofs are for), key.txt (the verifier key) and
// manifest.txt: the SHA-256 of every other file, signed with the same key.
package evidence

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"wps/internal/wps"
)

// The files every bundle has.
const (
	MeasurementFile = "measurement.json"
	AuditFile       = "audit-events.json"
	CheckpointFile  = "checkpoint.txt"
	KeyFile         = "key.txt"
	ManifestFile    = "manifest.txt"
)

// Write writes ev as a bundle (a zip file) to w.
func Write(w io.Writer, ev wps.Evidence) error {
	files := map[string][]byte{}
	var names []string
	add := func(name string, b []byte) {
		files[name] = b
		names = append(names, name)
	}
	m, err := json.MarshalIndent(ev.Measurement, "", "  ")
	if err != nil {
		return err
	}
	add(MeasurementFile, append(m, '\n'))
	for i, l := range ev.Leaves {
		dir := "leaves/"
		if wps.IsActionLeaf(l.Kind) {
			dir = "actions/"
		}
		b, err := leafFile(l)
		if err != nil {
			return err
		}
		add(fmt.Sprintf("%s%03d-%s-%s.json", dir, i+1, l.Kind, l.ID), b)
	}
	audit := ev.Audit
	if audit == nil {
		audit = []wps.EvidenceLeaf{}
	}
	b, err := canonical(audit)
	if err != nil {
		return err
	}
	add(AuditFile, b)
	for _, d := range ev.Documents {
		add("documents/"+d.ID+".pdf", d.Content)
	}
	for _, s := range ev.Workbooks {
		add("workbooks/"+s.ID+".xlsx", s.Content)
	}
	add(CheckpointFile, []byte(ev.Checkpoint))
	add(KeyFile, []byte(ev.Key+"\n"))
	var lines strings.Builder
	for _, name := range names {
		sum := sha256.Sum256(files[name])
		fmt.Fprintf(&lines, "%s %s\n", hex.EncodeToString(sum[:]), name)
	}
	manifest, err := ev.SignManifest(lines.String())
	if err != nil {
		return err
	}
	add(ManifestFile, []byte(manifest))
	z := zip.NewWriter(w)
	for _, name := range names {
		f, err := z.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Unix(0, 0).UTC()})
		if err != nil {
			return err
		}
		if _, err := f.Write(files[name]); err != nil {
			return err
		}
	}
	return z.Close()
}

// leafFile is a leaf's file: its proof and data, canonical JSON.
func leafFile(l wps.EvidenceLeaf) ([]byte, error) { return canonical(l) }

// canonical is v as indented JSON with a final newline: the one form a
// bundle's JSON files may have (Verify re-encodes them and compares).
func canonical(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Report is what Verify checked.
type Report struct {
	Leaves        int // leaves whose hash and inclusion proof were checked
	Origin        string
	TreeSize      int64
	MeasurementID string
}

// Verify checks a bundle offline: the checkpoint's signature against
// key.txt, the manifest's signature and every file's SHA-256 against it,
// each leaf's hash recomputed from its data and its inclusion proof
// against the checkpoint, the measurement's actions against their leaves,
// and the documents' SHA-256 against the leaves that record them. The
// error names the file at fault. key.txt is the key the bundle says it
// was signed with: compare it with the one your organization publishes
// (GET /v1/ledger/key).
func Verify(bundle []byte) (Report, error) {
	var rep Report
	z, err := zip.NewReader(bytes.NewReader(bundle), int64(len(bundle)))
	if err != nil {
		return rep, fmt.Errorf("the bundle is not a zip file: %w", err)
	}
	files := map[string][]byte{}
	var names []string
	for _, f := range z.File {
		if _, dup := files[f.Name]; dup {
			return rep, fmt.Errorf("%s: twice in the bundle", f.Name)
		}
		rc, err := f.Open()
		if err != nil {
			return rep, fmt.Errorf("%s: %w", f.Name, err)
		}
		b, err := io.ReadAll(io.LimitReader(rc, 1<<30))
		rc.Close()
		if err != nil {
			return rep, fmt.Errorf("%s: %w", f.Name, err)
		}
		files[f.Name] = b
		names = append(names, f.Name)
	}
	need := func(name string) ([]byte, error) {
		b, ok := files[name]
		if !ok {
			return nil, fmt.Errorf("%s: missing from the bundle", name)
		}
		return b, nil
	}

	// The key, the checkpoint, the manifest.
	kb, err := need(KeyFile)
	if err != nil {
		return rep, err
	}
	v, err := note.NewVerifier(strings.TrimSpace(string(kb)))
	if err != nil || string(kb) != strings.TrimSpace(string(kb))+"\n" {
		return rep, fmt.Errorf("%s: not a verifier key: %v", KeyFile, err)
	}
	cb, err := need(CheckpointFile)
	if err != nil {
		return rep, err
	}
	cp, err := wps.OpenCheckpoint(cb, v, "")
	if err != nil {
		return rep, fmt.Errorf("%s: %w", CheckpointFile, err)
	}
	orgID, ok := strings.CutPrefix(cp.Origin, "wps/")
	if !ok {
		return rep, fmt.Errorf("%s: origin %q is not a wps ledger's", CheckpointFile, cp.Origin)
	}
	rep.Origin, rep.TreeSize = cp.Origin, cp.Size
	mb, err := need(ManifestFile)
	if err != nil {
		return rep, err
	}
	mn, err := note.Open(mb, note.VerifierList(v))
	if err != nil {
		return rep, fmt.Errorf("%s: %w", ManifestFile, err)
	}
	lines := strings.Split(strings.TrimSuffix(mn.Text, "\n"), "\n")
	first, rest := lines[0], lines[1:]
	measurementID, ok := strings.CutPrefix(first, wps.EvidenceOrigin(orgID, ""))
	if !ok || measurementID == "" {
		return rep, fmt.Errorf("%s: it is not the manifest of a measurement of %s", ManifestFile, cp.Origin)
	}
	rep.MeasurementID = measurementID
	listed := map[string]string{}
	for _, line := range rest {
		sum, name, ok := strings.Cut(line, " ")
		if !ok || len(sum) != 64 {
			return rep, fmt.Errorf("%s: bad line %q", ManifestFile, line)
		}
		listed[name] = sum
	}

	// Each file's own checks, then its SHA-256 against the manifest.
	var m struct {
		ID        string `json:"id"`
		ProcessID string `json:"processId"`
		Process   struct {
			Actions []struct {
				ID        string   `json:"id"`
				StepID    string   `json:"stepId"`
				UserID    string   `json:"userId"`
				CreatedAt wps.Time `json:"createdAt"`
			} `json:"actions"`
		} `json:"process"`
	}
	leaves := map[string]map[string]any{} // each leaf's data by its entry's id
	var docs []map[string]any             // the document leaves
	check := func(name string, l wps.EvidenceLeaf) error {
		h := tlog.RecordHash(l.Leaf)
		if h.String() != l.LeafHash {
			return fmt.Errorf("%s: the leaf's data does not give its leaf hash", name)
		}
		if l.TreeSize != cp.Size {
			return fmt.Errorf("%s: its proof is for a tree of size %d, the checkpoint's is %d", name, l.TreeSize, cp.Size)
		}
		proof := make(tlog.RecordProof, len(l.Proof))
		for i, s := range l.Proof {
			if proof[i], err = tlog.ParseHash(s); err != nil {
				return fmt.Errorf("%s: proof[%d]: %w", name, i, err)
			}
		}
		if err := tlog.CheckRecord(proof, cp.Size, cp.Root, l.LeafIndex, h); err != nil {
			return fmt.Errorf("%s: the leaf is not in the signed checkpoint: %w", name, err)
		}
		var data map[string]any
		if err := json.Unmarshal(l.Leaf, &data); err != nil {
			return fmt.Errorf("%s: the leaf is not JSON", name)
		}
		if data["orgId"] != orgID || data["kind"] != l.Kind {
			return fmt.Errorf("%s: the leaf is not a %s leaf of %s", name, l.Kind, cp.Origin)
		}
		leaves[l.ID] = data
		rep.Leaves++
		return nil
	}
	readLeaf := func(name string, b []byte, into any) error {
		if err := json.Unmarshal(b, into); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		again, err := canonical(into)
		if err != nil || !bytes.Equal(again, b) {
			return fmt.Errorf("%s: changed (it is not as the server wrote it)", name)
		}
		return nil
	}
	slices.Sort(names)
	for _, name := range names {
		b := files[name]
		switch {
		case name == MeasurementFile:
			if err := json.Unmarshal(b, &m); err != nil || m.ID != measurementID {
				return rep, fmt.Errorf("%s: not the measurement %s", name, measurementID)
			}
		case name == AuditFile:
			var list []wps.EvidenceLeaf
			if err := readLeaf(name, b, &list); err != nil {
				return rep, err
			}
			for _, l := range list {
				if l.Kind != wps.LeafAudit {
					return rep, fmt.Errorf("%s: a leaf of kind %s", name, l.Kind)
				}
				if err := check(name, l); err != nil {
					return rep, err
				}
			}
		case strings.HasPrefix(name, "actions/") || strings.HasPrefix(name, "leaves/"):
			var l wps.EvidenceLeaf
			if err := readLeaf(name, b, &l); err != nil {
				return rep, err
			}
			if err := check(name, l); err != nil {
				return rep, err
			}
			if leaves[l.ID]["measurementId"] != measurementID {
				return rep, fmt.Errorf("%s: the leaf is not of measurement %s", name, measurementID)
			}
			if l.Kind == wps.LeafDocument {
				docs = append(docs, leaves[l.ID])
			}
		}
		if name == ManifestFile {
			continue
		}
		sum := sha256.Sum256(b)
		want, ok := listed[name]
		if !ok {
			return rep, fmt.Errorf("%s: not in the signed manifest", name)
		}
		if hex.EncodeToString(sum[:]) != want {
			return rep, fmt.Errorf("%s: changed (its SHA-256 is not the signed manifest's)", name)
		}
		delete(listed, name)
	}
	for name := range listed {
		return rep, fmt.Errorf("%s: missing from the bundle", name)
	}

	// The measurement's actions are the leaves' actions; the documents
	// are those their leaves record.
	for _, a := range m.Process.Actions {
		l, ok := leaves[a.ID]
		if !ok || !wps.IsActionLeaf(fmt.Sprint(l["kind"])) {
			return rep, fmt.Errorf("%s: action %s has no leaf in the bundle", MeasurementFile, a.ID)
		}
		at, _ := json.Marshal(a.CreatedAt)
		if l["stepId"] != a.StepID || l["userId"] != a.UserID || `"`+fmt.Sprint(l["createdAt"])+`"` != string(at) {
			return rep, fmt.Errorf("%s: action %s is not as its leaf records it", MeasurementFile, a.ID)
		}
	}
	for _, name := range names {
		dir, file := path.Split(name)
		if dir != "documents/" {
			continue
		}
		id := strings.TrimSuffix(file, ".pdf")
		sum := sha256.Sum256(files[name])
		i := slices.IndexFunc(docs, func(d map[string]any) bool { return d["subjectId"] == id })
		if i < 0 {
			return rep, fmt.Errorf("%s: no leaf of the bundle records this document", name)
		}
		if docs[i]["sha256"] != hex.EncodeToString(sum[:]) {
			return rep, fmt.Errorf("%s: its SHA-256 is not the one its leaf records", name)
		}
	}
	if rep.Leaves == 0 {
		return rep, errors.New("the bundle holds no leaf")
	}
	return rep, nil
}
