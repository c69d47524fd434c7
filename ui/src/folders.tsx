import { Fragment, type ReactNode } from "react";

/** A PATH that wraps between its folders, not inside one (copied, it is the PATH as it is). */
export function folders(path: string): ReactNode {
  return path.split(":").map((folder, i) => (
    <Fragment key={i}>
      {i > 0 && (
        <>
          :<wbr />
        </>
      )}
      {folder}
    </Fragment>
  ));
}
