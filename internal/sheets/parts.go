package sheets

import (
	"archive/zip"
	"encoding/xml"
	"errors"
	"io"
	"path"
	"strings"
)

// worksheetParts maps each worksheet's name to its part in the zip, from
// xl/workbook.xml and its relationships.
func worksheetParts(zr *zip.Reader) (map[string]*zip.File, error) {
	files := map[string]*zip.File{}
	for _, f := range zr.File {
		files[strings.TrimPrefix(f.Name, "/")] = f
	}
	var wb struct {
		Sheets []struct {
			Name string `xml:"name,attr"`
			RID  string `xml:"http://schemas.openxmlformats.org/officeDocument/2006/relationships id,attr"`
		} `xml:"sheets>sheet"`
	}
	var rels struct {
		Rels []struct {
			ID     string `xml:"Id,attr"`
			Target string `xml:"Target,attr"`
		} `xml:"Relationship"`
	}
	if err := decodePart(files["xl/workbook.xml"], &wb); err != nil {
		return nil, err
	}
	if err := decodePart(files["xl/_rels/workbook.xml.rels"], &rels); err != nil {
		return nil, err
	}
	target := map[string]string{}
	for _, r := range rels.Rels {
		t := r.Target
		if strings.HasPrefix(t, "/") {
			t = strings.TrimPrefix(t, "/")
		} else {
			t = path.Join("xl", t)
		}
		target[r.ID] = t
	}
	out := map[string]*zip.File{}
	for _, s := range wb.Sheets {
		if f := files[target[s.RID]]; f != nil && strings.Contains(target[s.RID], "worksheets/") {
			out[s.Name] = f
		}
	}
	return out, nil
}

func decodePart(f *zip.File, v any) error {
	if f == nil {
		return errors.New("a part of the workbook is missing")
	}
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	return xml.NewDecoder(rc).Decode(v)
}

// formulaCells lists the cells of a worksheet part that hold a formula,
// and counts its cells, stopping past limit.
func formulaCells(f *zip.File, limit int) (list []string, cells int, err error) {
	rc, err := f.Open()
	if err != nil {
		return nil, 0, err
	}
	defer rc.Close()
	d := xml.NewDecoder(rc)
	current := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return list, cells, nil
		}
		if err != nil {
			return nil, 0, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "c":
				if cells++; cells > limit {
					return list, cells, nil
				}
				current = ""
				for _, a := range t.Attr {
					if a.Name.Local == "r" {
						current = a.Value
					}
				}
			case "f":
				if current != "" {
					list = append(list, current)
					current = ""
				}
			}
		}
	}
}
